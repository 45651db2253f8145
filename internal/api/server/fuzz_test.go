package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzAPIMux routes fuzzed requests (seeds: testdata/fuzz) through the
// kubelet API's mux, its read-only subset and the healthz port: never a
// panic, and every answer a status the API knows.
func FuzzAPIMux(f *testing.F) {
	pods := podList{{ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default", UID: "u1"}}}
	cfg := APIConfig{
		Pods: pods, Statuses: statusMap{"u1": {Phase: v1.PodRunning}},
		RunningPods: func(context.Context) ([]v1.Pod, error) { return []v1.Pod{*pods[0]}, nil },
		Checks:      []HealthCheck{{Name: "ping", Check: func() error { return nil }}},
		Config:      map[string]any{"maxPods": 110},
		Metrics:     http.NotFoundHandler(),
		Debug:       DebugHandlers{Enabled: true, SystemLogs: true, Profiling: true, Flags: true},
	}
	handlers := []http.Handler{APIMux(cfg), ReadOnlyMux(cfg), HealthzMux(cfg.Checks)}
	f.Fuzz(func(t *testing.T, method, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") {
			return
		}
		for _, h := range handlers {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code < 200 || rec.Code > 599 {
				t.Fatalf("%s %s: status %d", method, target, rec.Code)
			}
		}
	})
}
