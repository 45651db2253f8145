package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// defaultURLTimeout bounds one fetch when no client is given, as upstream.
const defaultURLTimeout = 10 * time.Second

// URLSourceConfig configures RunURLSource.
type URLSourceConfig struct {
	// URL serves a v1 Pod, a v1 PodList, or several YAML documents of
	// those. Required.
	URL string
	// Header is sent with every request (staticPodURLHeader). Optional.
	Header http.Header
	// NodeName is the node the pods are bound to. Required.
	NodeName string
	// Period is the time between fetches. Defaults to DefaultCheckPeriod.
	Period time.Duration
	// Client performs the requests. Defaults to a client with a 10s timeout.
	Client *http.Client
	// Clock drives the fetches and stamps config.seen. Defaults to the real clock.
	Clock clock.Clock
	// Out receives a full snapshot of the source's pods after each fetch
	// that changed the body. Required.
	Out chan<- []*v1.Pod
	// LocalObjects (standalone mode) lets the pods reference the node's
	// local ConfigMaps and Secrets; without it such references make a pod
	// invalid, as upstream.
	LocalObjects bool
}

func (c URLSourceConfig) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is required"))
	} else if _, err := url.Parse(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("invalid URL: %w", err))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is required"))
	}
	if c.Out == nil {
		errs = append(errs, errors.New("output channel is required"))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("period %v is negative", c.Period))
	}
	return errors.Join(errs...)
}

// RunURLSource publishes the static pods served at cfg.URL until ctx ends.
// It fetches at once and then every cfg.Period. A failed request, a non-200
// answer, or a body that does not decode or validate (one bad pod spoils the
// body) is logged and keeps the last good set. An empty 200 body means no
// pods, as upstream. An unchanged body is not decoded or published again.
func RunURLSource(ctx context.Context, cfg URLSourceConfig) {
	if err := cfg.validate(); err != nil {
		klog.ErrorS(err, "Invalid static pod URL source configuration; not starting it", "url", redactURL(cfg.URL))
		return
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultCheckPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: defaultURLTimeout}
	}
	s := &urlSource{cfg: cfg, logURL: redactURL(cfg.URL)}
	klog.InfoS("Starting static pod URL source", "url", s.logURL, "period", cfg.Period)

	// The timer is re-armed before each fetch, so the period counts from
	// the start of a fetch.
	timer := cfg.Clock.NewTimer(cfg.Period)
	defer timer.Stop()
	for {
		if !s.poll(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
			timer.Reset(cfg.Period)
		}
	}
}

// urlSource is the state of one RunURLSource; only its goroutine uses it.
type urlSource struct {
	cfg    URLSourceConfig
	logURL string
	// lastBody is the last body fetched with status 200, decoded or not;
	// fetched says there was one.
	lastBody []byte
	fetched  bool
}

// poll fetches once and publishes the pods if the body changed and is
// valid. It returns false once ctx is done.
func (s *urlSource) poll(ctx context.Context) bool {
	body, err := s.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		klog.ErrorS(err, "Failed to fetch static pods; keeping the last good set", "url", s.logURL)
		return true
	}
	if s.fetched && bytes.Equal(body, s.lastBody) {
		return true
	}
	s.lastBody, s.fetched = body, true

	pods := []*v1.Pod{}
	if len(body) == 0 {
		klog.ErrorS(errors.New("zero-length body"), "Static pod URL served no data; publishing no pods", "url", s.logURL)
	} else {
		o := staticOrigin{NodeName: s.cfg.NodeName, Source: HTTPSource, Location: s.cfg.URL, Now: s.cfg.Clock.Now(), LocalObjects: s.cfg.LocalObjects}
		parsed, err := parseStaticPods(body, o)
		if err != nil {
			klog.ErrorS(err, "Invalid static pods from URL; keeping the last good set", "url", s.logURL)
			return true
		}
		pods, err = dedupePods(parsed)
		if err != nil {
			klog.ErrorS(err, "Static pods from URL have duplicates; the first of each is kept", "url", s.logURL)
		}
	}
	klog.V(4).InfoS("Static pod URL source fetched", "url", s.logURL, "pods", len(pods))
	select {
	case s.cfg.Out <- pods:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetch GETs the URL and returns the body of a 200 answer.
func (s *urlSource) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	req.Header = s.cfg.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("request failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("unexpected status %q", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if len(body) > maxManifestBytes {
		return nil, fmt.Errorf("body exceeds %d bytes", maxManifestBytes)
	}
	return body, nil
}

// dedupePods keeps the first pod of each namespace/name and UID, and
// returns an error describing the ones dropped.
func dedupePods(pods []*v1.Pod) ([]*v1.Pod, error) {
	r := manifestResult{pods: pods}
	out, _, problems := assembleSnapshot([]manifestResult{r}, nil, false)
	if p, ok := problems[""]; ok {
		return out, p.err
	}
	return out, nil
}

// redactURL hides a password in the URL, for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
