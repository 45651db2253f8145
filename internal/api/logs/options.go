package logs

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decodeLogOptions reads v1.PodLogOptions from a query as the API's
// parameter conversion does: the first value of each key counts; a boolean
// is false only when absent, "0" or "false"; numbers must parse; sinceTime
// is RFC 3339 ("" and "null" mean the zero time). The legacy "tail"
// parameter sets tailLines, "all" meaning every line.
func decodeLogOptions(query url.Values) (*v1.PodLogOptions, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if tail := q.Get("tail"); tail != "" {
		q["tailLines"] = []string{tail}
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	opts := &v1.PodLogOptions{}
	first := func(key string) (string, bool) {
		v, ok := q[key]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	boolean := func(key string) bool {
		v, ok := first(key)
		return ok && v != "0" && !strings.EqualFold(v, "false")
	}
	integer := func(key string) (*int64, error) {
		v, ok := first(key)
		if !ok {
			return nil, nil
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return &i, nil
	}
	opts.Container, _ = first("container")
	opts.Follow = boolean("follow")
	opts.Previous = boolean("previous")
	opts.Timestamps = boolean("timestamps")
	opts.InsecureSkipTLSVerifyBackend = boolean("insecureSkipTLSVerifyBackend")
	var err error
	if opts.SinceSeconds, err = integer("sinceSeconds"); err != nil {
		return nil, err
	}
	if opts.TailLines, err = integer("tailLines"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = integer("limitBytes"); err != nil {
		return nil, err
	}
	if v, ok := first("sinceTime"); ok {
		t := metav1.Time{}
		if err := t.UnmarshalQueryParameter(v); err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		opts.SinceTime = &t
	}
	if v, ok := first("stream"); ok {
		opts.Stream = &v
	}
	return opts, nil
}

// validateLogOptions applies the API's PodLogOptions validation.
func validateLogOptions(opts *v1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if opts.Stream != nil {
		switch *opts.Stream {
		case v1.LogStreamStdout, v1.LogStreamStderr, v1.LogStreamAll:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *opts.Stream,
				[]string{v1.LogStreamStdout, v1.LogStreamStderr, v1.LogStreamAll}))
		}
		if *opts.Stream != v1.LogStreamAll && opts.TailLines != nil {
			errs = append(errs, field.Forbidden(field.NewPath(""), "`tailLines` and specific `stream` are mutually exclusive for now"))
		}
	}
	return errs
}

// readOptions turns API options into reader options; sinceSeconds counts
// back from now, and the later of it and sinceTime wins.
func readOptions(opts *v1.PodLogOptions, now time.Time) Options {
	o := Options{
		Follow:     opts.Follow,
		TailLines:  opts.TailLines,
		Timestamps: opts.Timestamps,
		LimitBytes: opts.LimitBytes,
		Previous:   opts.Previous,
	}
	var since time.Time
	if opts.SinceSeconds != nil {
		since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if opts.SinceTime != nil && opts.SinceTime.After(since) {
		since = opts.SinceTime.Time
	}
	if !since.IsZero() {
		o.SinceTime = &since
	}
	return o
}
