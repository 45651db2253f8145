package localapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/localobjects"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

const testNode = "node1"

// fakeKubelet is the kubelet state the API reads: pods (as the pod
// manager holds them, with kubelet names), statuses, workers.
type fakeKubelet struct {
	mu       sync.Mutex
	pods     []*v1.Pod
	statuses map[types.UID]v1.PodStatus
	states   map[types.UID]podworkers.PodState
}

func (f *fakeKubelet) List() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*v1.Pod(nil), f.pods...)
}

func (f *fakeKubelet) Get(uid types.UID) (v1.PodStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.statuses[uid]
	return s, ok
}

func (f *fakeKubelet) States() map[types.UID]podworkers.PodState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]podworkers.PodState{}
	for k, v := range f.states {
		out[k] = v
	}
	return out
}

func (f *fakeKubelet) set(pods []*v1.Pod, statuses map[types.UID]v1.PodStatus, states map[types.UID]podworkers.PodState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods, f.statuses, f.states = pods, statuses, states
}

// staticPod is a pod as the file source prepares it from a manifest.
func staticPod(t *testing.T, name, path string) *v1.Pod {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "busybox"}}}}
	out, errs := sources.PrepareManifestPod(p, testNode, path, true, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return out
}

type fakeEvents struct {
	events  []v1.Event
	changed chan struct{}
}

func (f *fakeEvents) List() []v1.Event         { return append([]v1.Event(nil), f.events...) }
func (f *fakeEvents) Changed() <-chan struct{} { return f.changed }

// testServer is a Server over fakes and a temporary staticPodPath.
type testServer struct {
	t       *testing.T
	s       *Server
	http    *httptest.Server
	kubelet *fakeKubelet
	store   *localobjects.Store
	events  *fakeEvents
	dir     string
	clock   *clocktesting.FakeClock
	streams http.Handler
	logs    http.Handler
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	ts := &testServer{t: t, kubelet: &fakeKubelet{}, dir: t.TempDir(), events: &fakeEvents{changed: make(chan struct{}, 1)},
		clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))}
	ts.store = localobjects.NewStore(localobjects.StoreConfig{Clock: ts.clock})
	ts.s = New(Config{
		NodeName: testNode, StaticPodPath: ts.dir, ObjectsDir: ts.dir,
		Pods: ts.kubelet, Statuses: ts.kubelet, Workers: ts.kubelet, PodsChanged: make(chan struct{}),
		Objects: ts.store, Events: ts.events,
		Node: func(context.Context) *v1.Node {
			return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"node-role.kubernetes.io/edge": ""}}}
		},
		ContainerLogs: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ts.logs.ServeHTTP(w, r) }),
		Streaming:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ts.streams.ServeHTTP(w, r) }),
		Version:       version.Info{Major: "1", Minor: "36", GitVersion: "v1.36.3"},
		Clock:         ts.clock, WriteWait: 200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	go ts.s.Run(ctx)
	ts.http = httptest.NewServer(ts.s)
	t.Cleanup(func() {
		cancel()
		ts.http.Close()
	})
	return ts
}

// response is a finished request.
type response struct {
	code   int
	header http.Header
	body   string
}

func (r response) decode(t *testing.T, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), into); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

// status decodes a Status answer.
func (r response) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	r.decode(t, &st)
	if st.Kind != "Status" || st.APIVersion != "v1" {
		t.Fatalf("not a Status: %s", r.body)
	}
	return st
}

func (ts *testServer) do(method, path, contentType, body string, header ...string) response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: string(data)}
}

func (ts *testServer) get(path string, header ...string) response {
	ts.t.Helper()
	return ts.do(http.MethodGet, path, "", "", header...)
}

// writeManifest writes a manifest file into staticPodPath.
func (ts *testServer) writeManifest(name, content string) string {
	ts.t.Helper()
	path := filepath.Join(ts.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		ts.t.Fatal(err)
	}
	return path
}

func (ts *testServer) readManifest(name string) string {
	ts.t.Helper()
	data, err := os.ReadFile(filepath.Join(ts.dir, name))
	if err != nil {
		ts.t.Fatal(err)
	}
	return string(data)
}

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
