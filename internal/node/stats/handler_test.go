package stats

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestSummaryHandler(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		target      string
		form        url.Values
		breakIt     func(f *fixture)
		wantStatus  int
		wantOnly    bool
		wantBodyHas string
	}{
		{name: "full summary", method: http.MethodGet, target: "/stats/summary", wantStatus: http.StatusOK},
		{name: "only cpu and memory", method: http.MethodGet, target: "/stats/summary?only_cpu_and_memory=true", wantStatus: http.StatusOK, wantOnly: true},
		{name: "other values mean full", method: http.MethodGet, target: "/stats/summary?only_cpu_and_memory=1", wantStatus: http.StatusOK},
		{name: "repeated parameter means full", method: http.MethodGet, target: "/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true", wantStatus: http.StatusOK},
		{name: "POST form", method: http.MethodPost, target: "/stats/summary", form: url.Values{"only_cpu_and_memory": {"true"}}, wantStatus: http.StatusOK, wantOnly: true},
		{name: "other methods refused", method: http.MethodDelete, target: "/stats/summary", wantStatus: http.StatusMethodNotAllowed},
		{
			name: "runtime failure is a 500 with upstream's text", method: http.MethodGet, target: "/stats/summary",
			breakIt:    func(f *fixture) { f.rt.listErr = errors.New("runtime gone") },
			wantStatus: http.StatusInternalServerError, wantBodyHas: "Internal Error: failed to list pod stats: failed to list all pod sandboxes: runtime gone",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.breakIt != nil {
				tc.breakIt(f)
			}
			var body io.Reader
			if tc.form != nil {
				body = strings.NewReader(tc.form.Encode())
			}
			req := httptest.NewRequest(tc.method, tc.target, body)
			if tc.form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			rec := httptest.NewRecorder()
			f.p.SummaryHandler().ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantBodyHas != "" && !strings.Contains(rec.Body.String(), tc.wantBodyHas) {
				t.Errorf("body %q lacks %q", rec.Body, tc.wantBodyHas)
			}
			if tc.wantStatus != http.StatusOK {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if !strings.HasPrefix(rec.Body.String(), "{\n \"node\": {\n  \"nodeName\": \"node-1\"") {
				t.Errorf("not indented like upstream: %.60q", rec.Body)
			}
			var s statsapi.Summary
			dec := json.NewDecoder(rec.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				t.Fatal(err)
			}
			if only := s.Node.Fs == nil; only != tc.wantOnly {
				t.Errorf("only cpu and memory = %v, want %v", only, tc.wantOnly)
			}
			if len(s.Pods) != 3 {
				t.Errorf("pods = %d, want 3", len(s.Pods))
			}
		})
	}
}
