package streaming

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FuzzStreamRequest sends exec, attach, portForward and run requests with
// fuzzed paths and queries, as SPDY or WebSocket upgrades (seeds:
// testdata/fuzz), to the streaming handler over a fake runtime whose
// streaming server does not answer: never a panic, and every answer a
// status the API knows.
func FuzzStreamRequest(f *testing.F) {
	rt := newFakeRuntime("http://127.0.0.1:1/stream/token")
	rt.execSync = &runtimeapi.ExecSyncResponse{Stdout: []byte("out")}
	h := Handler(Config{Pods: newFakePods(webPod, idlePod), Runtime: rt})
	f.Fuzz(func(t *testing.T, method, target string, websocket bool) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
		headers := spdyHeaders
		if websocket {
			headers = websocketHeaders
		}
		for k, v := range headers {
			req.Header[k] = v
		}
		req.Header.Set("Connection", "Upgrade")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code > 599 {
			t.Fatalf("%s %s: status %d", method, target, rec.Code)
		}
	})
}

// FuzzPortForwardPorts parses fuzzed port lists of WebSocket port forwards.
func FuzzPortForwardPorts(f *testing.F) {
	for _, q := range []string{"port=8080", "port=80,443", "port=80&port=81", "port=", "port=0", "port=65536"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest(http.MethodGet, "/portForward/ns/web", nil)
		r.URL.RawQuery = raw
		for k, v := range websocketHeaders {
			r.Header[k] = v
		}
		r.Header.Set("Connection", "Upgrade")
		ports, err := portForwardPorts(r)
		if err != nil {
			return
		}
		for _, p := range ports {
			if p < 1 || p > 65535 {
				t.Fatalf("query %q: port %d accepted", raw, p)
			}
		}
	})
}
