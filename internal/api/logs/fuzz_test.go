package logs

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzContainerLogsRequest sends /containerLogs requests with fuzzed paths
// and queries (seeds: the handler's test cases, testdata/fuzz) to the
// handler over a node with pods and log files: never a panic, and every
// answer a status the API knows.
func FuzzContainerLogsRequest(f *testing.F) {
	cfg := newFixture(f).config()
	cfg.SplitStreams = true
	h := ContainerLogsHandler(cfg)
	f.Fuzz(func(t *testing.T, method, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return
		}
		q := u.Query()
		delete(q, "follow") // a followed running container never ends
		u.RawQuery = q.Encode()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("%s %s: status %d", method, target, rec.Code)
		}
	})
}

// FuzzLogQuery decodes, validates and applies fuzzed log queries.
func FuzzLogQuery(f *testing.F) {
	for _, q := range []string{"previous=true", "tailLines=2&timestamps=true", "tail=all", "limitBytes=7", "sinceSeconds=6",
		"sinceTime=2026-03-01T10:00:02Z", "stream=Stderr&tailLines=1", "sinceSeconds=5&sinceTime=2026-03-01T10:00:02Z"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		opts, err := decodeLogOptions(q)
		if err != nil {
			return
		}
		if len(validateLogOptions(opts)) > 0 {
			return
		}
		_ = readOptions(opts, t0)
	})
}
