package sources

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// fakeManifestServer serves a settable status and body and reports each
// request it received.
type fakeManifestServer struct {
	mu       sync.Mutex
	status   int
	body     string
	requests chan http.Header
}

func (f *fakeManifestServer) set(status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.body = status, body
}

func (f *fakeManifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	status, body := f.status, f.body
	f.mu.Unlock()
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
	f.requests <- r.Header.Clone()
}

func TestURLSource(t *testing.T) {
	fake := &fakeManifestServer{status: http.StatusOK, body: manifest("web", "busybox", ""), requests: make(chan http.Header, 10)}
	server := httptest.NewServer(fake)
	defer server.Close()

	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	out := make(chan []*v1.Pod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunURLSource(ctx, URLSourceConfig{
			URL: server.URL + "/pods", Header: http.Header{"X-Token": {"a", "b"}}, NodeName: testNode,
			Period: time.Minute, Clock: clk, Client: server.Client(), Out: out,
		})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("RunURLSource did not return after its context was cancelled")
		}
	}()

	awaitRequest := func() http.Header {
		t.Helper()
		select {
		case h := <-fake.requests:
			return h
		case <-time.After(waitTimeout):
			t.Fatalf("no request within %v", waitTimeout)
			return nil
		}
	}
	// tick fires the period and waits for the fetch it causes. The timer is
	// re-armed before each fetch, so the next tick cannot be lost.
	tick := func() {
		t.Helper()
		clk.Step(time.Minute)
		awaitRequest()
	}

	if h := awaitRequest(); !reflect.DeepEqual(h.Values("X-Token"), []string{"a", "b"}) {
		t.Errorf("request headers X-Token = %v, want [a b]", h.Values("X-Token"))
	}
	first := recvSnapshot(t, out)
	if len(first) != 1 || first[0].Name != "web-node1" || first[0].Annotations[podutil.ConfigSourceAnnotationKey] != HTTPSource {
		t.Fatalf("first snapshot = %v", namesOf(first))
	}

	steps := []struct {
		name   string
		status int
		body   string
		want   []string // nil: nothing is published
	}{
		{name: "server error keeps the last good set", status: http.StatusInternalServerError, body: "boom"},
		{name: "changed body is published", status: http.StatusOK, body: manifest("api", "nginx", ""), want: []string{"default/api-node1"}},
		{name: "unchanged body is not published again", status: http.StatusOK, body: manifest("api", "nginx", "")},
		{name: "undecodable body keeps the last good set", status: http.StatusOK, body: "apiVersion: v1\nkind: Pod\nmetadata: [x"},
		{name: "invalid pod keeps the last good set", status: http.StatusOK, body: manifest("bad", `""`, "")},
		{name: "not found keeps the last good set", status: http.StatusNotFound},
		{
			name: "pod list is published", status: http.StatusOK,
			body: "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: one}\n  spec: {containers: [{name: c, image: busybox}]}\n" +
				"- metadata: {name: two}\n  spec: {containers: [{name: c, image: busybox}]}\n",
			want: []string{"default/one-node1", "default/two-node1"},
		},
		{name: "empty body means no pods", status: http.StatusOK, body: "", want: []string{}},
	}
	for _, s := range steps {
		fake.set(s.status, s.body)
		tick()
		if s.want == nil {
			continue // checked by the next published snapshot being the expected one
		}
		if got := namesOf(recvSnapshot(t, out)); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: snapshot = %v, want %v", s.name, got, s.want)
		}
	}
}

func TestSourceConfigValidation(t *testing.T) {
	out := make(chan []*v1.Pod)
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{name: "file: complete", err: FileSourceConfig{Path: "/m", NodeName: "n", Out: out}.validate()},
		{name: "file: no path", err: FileSourceConfig{NodeName: "n", Out: out}.validate(), wantErr: true},
		{name: "file: no node", err: FileSourceConfig{Path: "/m", Out: out}.validate(), wantErr: true},
		{name: "file: no output", err: FileSourceConfig{Path: "/m", NodeName: "n"}.validate(), wantErr: true},
		{name: "file: negative period", err: FileSourceConfig{Path: "/m", NodeName: "n", Out: out, Period: -1}.validate(), wantErr: true},
		{name: "url: complete", err: URLSourceConfig{URL: "http://127.0.0.1/p", NodeName: "n", Out: out}.validate()},
		{name: "url: no URL", err: URLSourceConfig{NodeName: "n", Out: out}.validate(), wantErr: true},
		{name: "url: bad URL", err: URLSourceConfig{URL: "http://[::1", NodeName: "n", Out: out}.validate(), wantErr: true},
		{name: "url: no output", err: URLSourceConfig{URL: "http://127.0.0.1/p", NodeName: "n"}.validate(), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.err != nil) != tc.wantErr {
				t.Errorf("validate() = %v, want error %v", tc.err, tc.wantErr)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	if got := redactURL("http://user:secret@127.0.0.1/pods"); got != "http://user:xxxxx@127.0.0.1/pods" {
		t.Errorf("redactURL = %q", got)
	}
}
