package logs

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeLogsHandler(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "log")
	writeFile(t, filepath.Join(root, "syslog"), "system log\n")
	writeFile(t, filepath.Join(root, "pods", "ns_web_u1", "app", "0.log"), crilog("0 stdout F hi"))
	writeFile(t, filepath.Join(base, "secret"), "outside\n")
	if err := os.MkdirAll(filepath.Join(root, "containers"), 0o755); err != nil {
		t.Fatal(err)
	}
	// As the kubelet links /var/log/containers/* into /var/log/pods.
	if err := os.Symlink(filepath.Join(root, "pods", "ns_web_u1", "app", "0.log"), filepath.Join(root, "containers", "web_ns_app-abc.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(root, "pods", "up")); err != nil {
		t.Fatal(err)
	}
	h := NodeLogsHandler(Config{NodeLogDir: root})
	tests := []struct {
		name         string
		method       string
		path         string
		wantCode     int
		wantContains []string
		wantAbsent   []string
		wantLocation string
	}{
		{name: "root listing", path: "/logs/", wantCode: 200, wantContains: []string{`<a href="syslog">syslog</a>`, `<a href="pods/">pods/</a>`, `<a href="containers/">containers/</a>`}},
		{name: "a file", path: "/logs/syslog", wantCode: 200, wantContains: []string{"system log\n"}},
		{name: "nested file", path: "/logs/pods/ns_web_u1/app/0.log", wantCode: 200, wantContains: []string{"stdout F hi"}},
		{name: "directory listing", path: "/logs/pods/ns_web_u1/", wantCode: 200, wantContains: []string{`<a href="app/">app/</a>`}},
		{name: "directory without its slash redirects", path: "/logs/pods", wantCode: 301, wantLocation: "pods/"},
		{name: "symlink inside the directory", path: "/logs/containers/web_ns_app-abc.log", wantCode: 200, wantContains: []string{"stdout F hi"}},
		{name: "symlink leaving the directory", path: "/logs/escape", wantCode: 403},
		{name: "relative symlink leaving the directory", path: "/logs/pods/up/secret", wantCode: 403},
		{name: "dot-dot stays inside", path: "/logs/../secret", wantCode: 404},
		{name: "encoded dot-dot stays inside", path: "/logs/%2e%2e/secret", wantCode: 404},
		{name: "missing file", path: "/logs/nope", wantCode: 404},
		{name: "HEAD", method: http.MethodHead, path: "/logs/syslog", wantCode: 200},
		{name: "not GET", method: http.MethodPost, path: "/logs/syslog", wantCode: 405},
		{name: "outside /logs/", path: "/logs", wantCode: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, "/", nil)
			req.URL.Path, req.URL.RawPath = tc.path, ""
			if strings.Contains(tc.path, "%") {
				req = httptest.NewRequest(method, tc.path, nil)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tc.wantCode {
				t.Fatalf("status %d, want %d (body %q)", rec.Code, tc.wantCode, body)
			}
			for _, s := range tc.wantContains {
				if !strings.Contains(string(body), s) {
					t.Errorf("body %q lacks %q", body, s)
				}
			}
			if strings.Contains(string(body), "outside") {
				t.Errorf("served a file outside the log directory: %q", body)
			}
			if tc.wantLocation != "" && rec.Header().Get("Location") != tc.wantLocation {
				t.Errorf("Location %q, want %q", rec.Header().Get("Location"), tc.wantLocation)
			}
		})
	}
}

func TestNodeLogsHandlerDefaultsToVarLog(t *testing.T) {
	if got := (Config{}).withDefaults().NodeLogDir; got != "/var/log" {
		t.Errorf("NodeLogDir defaults to %q", got)
	}
}
