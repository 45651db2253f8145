package logs

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// fixture is a node with pods, their container instances and log files.
type fixture struct {
	dir      string
	pods     fakePods
	rt       *fakeRuntime
	statuses fakeStatuses
	clock    *testingclock.FakeClock
}

func newPod(ns, name string, uid types.UID, policy v1.RestartPolicy, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}, Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

// instance adds a container instance whose log file holds content.
func (f *fixture) instance(t testing.TB, uid types.UID, name, id string, attempt uint32, state runtimeapi.ContainerState, exitCode int32, content string) {
	path := filepath.Join(f.dir, string(uid), name, strconv.Itoa(int(attempt))+".log")
	writeFile(t, path, content)
	f.rt.add(uid, name, id, attempt, int64(attempt)+1, state, exitCode, path)
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{dir: t.TempDir(), pods: fakePods{}, rt: newFakeRuntime(), statuses: fakeStatuses{}, clock: testingclock.NewFakeClock(t0.Add(10 * time.Second))}

	web := newPod("ns", "web", "u-web", v1.RestartPolicyAlways, "app", "waiter", "crash", "both")
	web.Spec.InitContainers = []v1.Container{{Name: "init"}}
	web.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	f.pods["ns/web"] = web
	f.instance(t, "u-web", "init", "i1", 0, exited, 0, crilog("0 stdout F init done"))
	f.instance(t, "u-web", "app", "a1", 0, exited, 1, crilog("0 stdout F first run"))
	f.instance(t, "u-web", "app", "a2", 1, running, 0, crilog("0 stdout F zero", "2 stdout F two", "4 stderr F four", "6 stdout F six"))
	f.instance(t, "u-web", "crash", "c1", 0, exited, 2, crilog("0 stdout F crash one"))
	f.instance(t, "u-web", "crash", "c2", 1, exited, 3, crilog("0 stdout F crash two"))
	f.instance(t, "u-web", "both", "b1", 0, running, 0, crilog("0 stdout F out", "1 stderr F err"))

	f.pods["ns/job"] = newPod("ns", "job", "u-job", v1.RestartPolicyNever, "task")
	f.instance(t, "u-job", "task", "t1", 0, exited, 0, crilog("0 stdout F task output"))

	initing := newPod("ns", "initing", "u-initing", v1.RestartPolicyAlways, "main")
	initing.Spec.InitContainers = []v1.Container{{Name: "setup"}}
	f.pods["ns/initing"] = initing
	f.instance(t, "u-initing", "setup", "s1", 0, running, 0, crilog("0 stdout F setting up"))

	f.pods["ns/reported"] = newPod("ns", "reported", "u-rep", v1.RestartPolicyAlways, "img", "st", "unreported")
	f.statuses["u-rep"] = v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "img", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
		{Name: "st", ContainerID: "containerd://r1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
	}}
	// The runtime's newest instance is r2, but the status still says r1.
	f.instance(t, "u-rep", "st", "r1", 0, running, 0, crilog("0 stdout F from status"))
	f.instance(t, "u-rep", "st", "r2", 1, running, 0, crilog("0 stdout F newest"))
	f.instance(t, "u-rep", "unreported", "n1", 0, running, 0, crilog("0 stdout F from runtime"))

	f.pods["ns/broken"] = newPod("ns", "broken", "u-broken", v1.RestartPolicyAlways, "nostatus", "nofile")
	f.instance(t, "u-broken", "nostatus", "x1", 0, running, 0, crilog("0 stdout F x"))
	f.rt.statusErr["x1"] = status.Error(codes.Unavailable, "runtime down")
	f.rt.add("u-broken", "nofile", "y1", 0, 1, running, 0, filepath.Join(f.dir, "missing.log"))
	return f
}

func (f *fixture) config() Config {
	return Config{Pods: f.pods, Runtime: f.rt, Statuses: f.statuses, Clock: f.clock}
}

func TestContainerLogsHandler(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		url      string
		split    bool
		wantCode int
		wantBody string
		contains bool // wantBody is a substring
	}{
		{name: "current instance", url: "/containerLogs/ns/web/app", wantCode: 200, wantBody: "zero\ntwo\nfour\nsix\n"},
		{name: "previous instance", url: "/containerLogs/ns/web/app?previous=true", wantCode: 200, wantBody: "first run\n"},
		{name: "previous=1 is true", url: "/containerLogs/ns/web/app?previous=1", wantCode: 200, wantBody: "first run\n"},
		{name: "previous=false", url: "/containerLogs/ns/web/app?previous=false", wantCode: 200, wantBody: "zero\ntwo\nfour\nsix\n"},
		{name: "previous= (empty) is true", url: "/containerLogs/ns/web/app?previous=", wantCode: 200, wantBody: "first run\n"},
		{name: "tailLines", url: "/containerLogs/ns/web/app?tailLines=2", wantCode: 200, wantBody: "four\nsix\n"},
		{name: "legacy tail", url: "/containerLogs/ns/web/app?tail=1", wantCode: 200, wantBody: "six\n"},
		{name: "legacy tail=all", url: "/containerLogs/ns/web/app?tail=all&tailLines=1", wantCode: 200, wantBody: "zero\ntwo\nfour\nsix\n"},
		{name: "timestamps", url: "/containerLogs/ns/web/app?timestamps=true&tailLines=1", wantCode: 200, wantBody: "2026-03-01T10:00:06.000000000Z six\n"},
		{name: "limitBytes", url: "/containerLogs/ns/web/app?limitBytes=7", wantCode: 200, wantBody: "zero\ntw"},
		{name: "sinceSeconds counts back from the clock", url: "/containerLogs/ns/web/app?sinceSeconds=6", wantCode: 200, wantBody: "four\nsix\n"},
		{name: "sinceTime", url: "/containerLogs/ns/web/app?sinceTime=2026-03-01T10:00:02Z", wantCode: 200, wantBody: "two\nfour\nsix\n"},
		{name: "empty sinceTime means none", url: "/containerLogs/ns/web/app?sinceTime=", wantCode: 200, wantBody: "zero\ntwo\nfour\nsix\n"},
		{name: "stream=All is always accepted", url: "/containerLogs/ns/web/both?stream=All", wantCode: 200, wantBody: "out\nerr\n"},
		{name: "init container", url: "/containerLogs/ns/web/init", wantCode: 200, wantBody: "init done\n"},
		{name: "crash looping: current is the last exited", url: "/containerLogs/ns/web/crash", wantCode: 200, wantBody: "crash two\n"},
		{name: "crash looping: previous is the last exited", url: "/containerLogs/ns/web/crash?previous=true", wantCode: 200, wantBody: "crash two\n"},
		{name: "terminated for good", url: "/containerLogs/ns/job/task", wantCode: 200, wantBody: "task output\n"},
		{name: "status chooses the instance", url: "/containerLogs/ns/reported/st", wantCode: 200, wantBody: "from status\n"},
		{name: "container missing from the status", url: "/containerLogs/ns/reported/unreported", wantCode: 200, wantBody: "from runtime\n"},

		{name: "never ran", url: "/containerLogs/ns/web/waiter", wantCode: 400, wantBody: `container "waiter" in pod "web" is waiting to start: ContainerCreating`},
		{name: "ephemeral never ran", url: "/containerLogs/ns/web/debug", wantCode: 400, wantBody: `container "debug" in pod "web" is waiting to start: ContainerCreating`},
		{name: "waiting for init containers", url: "/containerLogs/ns/initing/main", wantCode: 400, wantBody: `container "main" in pod "initing" is waiting to start: PodInitializing`},
		{name: "image pull failure from the status", url: "/containerLogs/ns/reported/img", wantCode: 400, wantBody: `container "img" in pod "reported" is waiting to start: image can't be pulled`},
		{name: "no previous instance", url: "/containerLogs/ns/web/waiter?previous=true", wantCode: 400, wantBody: `previous terminated container "waiter" in pod "web" not found`},
		{name: "no previous of a terminated container", url: "/containerLogs/ns/job/task?previous=true", wantCode: 400, wantBody: `previous terminated container "task" in pod "job" not found`},
		{name: "unknown pod", url: "/containerLogs/ns/nope/app", wantCode: 404, wantBody: `pod "nope" does not exist`},
		{name: "pod in another namespace", url: "/containerLogs/other/web/app", wantCode: 404, wantBody: `pod "web" does not exist`},
		{name: "container not in the spec", url: "/containerLogs/ns/web/nope", wantCode: 404, wantBody: `container "nope" not found in pod "web"`},

		{name: "missing pod", url: "/containerLogs/ns//app", wantCode: 400, wantBody: `{"message": "Missing podID."}`},
		{name: "missing container", url: "/containerLogs/ns/web/", wantCode: 400, wantBody: `{"message": "Missing container name."}`},
		{name: "missing namespace", url: "/containerLogs//web/app", wantCode: 400, wantBody: `{"message": "Missing podNamespace."}`},
		{name: "too short a path", url: "/containerLogs/ns/web", wantCode: 404, wantBody: "404 page not found\n"},
		{name: "too long a path", url: "/containerLogs/ns/web/app/x", wantCode: 404, wantBody: "404 page not found\n"},
		{name: "not GET", method: http.MethodPost, url: "/containerLogs/ns/web/app", wantCode: 405, wantBody: "Method Not Allowed"},

		{name: "tailLines not a number", url: "/containerLogs/ns/web/app?tailLines=x", wantCode: 400, wantBody: `{"message": "Unable to decode query."}`},
		{name: "sinceTime not RFC 3339", url: "/containerLogs/ns/web/app?sinceTime=yesterday", wantCode: 400, wantBody: `{"message": "Unable to decode query."}`},
		{name: "negative tailLines", url: "/containerLogs/ns/web/app?tailLines=-1", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "zero limitBytes", url: "/containerLogs/ns/web/app?limitBytes=0", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "zero sinceSeconds", url: "/containerLogs/ns/web/app?sinceSeconds=0", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "sinceSeconds with sinceTime", url: "/containerLogs/ns/web/app?sinceSeconds=5&sinceTime=2026-03-01T10:00:02Z", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "unknown stream", url: "/containerLogs/ns/web/app?stream=Both", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "validation before the pod lookup", url: "/containerLogs/ns/nope/app?tailLines=-1", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "one stream without the feature gate", url: "/containerLogs/ns/web/both?stream=Stdout", wantCode: 400, wantBody: `unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet`},

		{name: "stdout only", split: true, url: "/containerLogs/ns/web/both?stream=Stdout", wantCode: 200, wantBody: "out\n"},
		{name: "stderr only", split: true, url: "/containerLogs/ns/web/both?stream=Stderr", wantCode: 200, wantBody: "err\n"},
		{name: "a stream with tailLines", split: true, url: "/containerLogs/ns/web/both?stream=Stderr&tailLines=1", wantCode: 422, wantBody: `{"message": "Invalid request."}`},

		{name: "runtime fails after the response began", url: "/containerLogs/ns/broken/nostatus", wantCode: 200, wantBody: "unable to retrieve container logs for containerd://x1"},
		{name: "log file missing", url: "/containerLogs/ns/broken/nofile", wantCode: 200, wantBody: "no such file or directory", contains: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.config()
			cfg.SplitStreams = tc.split
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			ContainerLogsHandler(cfg).ServeHTTP(rec, httptest.NewRequest(method, tc.url, nil))
			if rec.Code != tc.wantCode {
				t.Errorf("status %d, want %d (body %q)", rec.Code, tc.wantCode, rec.Body.String())
			}
			body := rec.Body.String()
			if (tc.contains && !strings.Contains(body, tc.wantBody)) || (!tc.contains && body != tc.wantBody) {
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q, want text/plain", ct)
			}
		})
	}
}

func TestContainerLogsHandlerRuntimeListFails(t *testing.T) {
	f := newFixture(t)
	f.rt.listErr = status.Error(codes.Unavailable, "runtime down")
	rec := httptest.NewRecorder()
	ContainerLogsHandler(f.config()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/containerLogs/ns/web/app", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "runtime down") {
		t.Errorf("got %d %q, want 400 with the runtime's error", rec.Code, rec.Body.String())
	}
}

// unwrapOnly hides the ResponseWriter's Flush, as some middleware does,
// leaving Unwrap for http.ResponseController.
type unwrapOnly struct{ w http.ResponseWriter }

func (u unwrapOnly) Header() http.Header         { return u.w.Header() }
func (u unwrapOnly) Write(p []byte) (int, error) { return u.w.Write(p) }
func (u unwrapOnly) WriteHeader(code int)        { u.w.WriteHeader(code) }
func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.w }

// TestContainerLogsHandlerFollow streams a running container's log over a
// real connection: lines arrive as they are written, and the response ends
// when the container exits.
func TestContainerLogsHandlerFollow(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Clock = nil // the real clock polls
	h := ContainerLogsHandler(cfg)
	// Behind a middleware's wrapper, flushing still reaches the connection.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(unwrapOnly{w}, r)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/containerLogs/ns/web/app?follow=true&tailLines=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line streamed")
			return ""
		}
	}
	if l := next(); l != "six\n" {
		t.Fatalf("first line %q", l)
	}
	path := filepath.Join(f.dir, "u-web", "app", "1.log")
	appendFile(t, path, crilog("7 stdout F seven"))
	if l := next(); l != "seven\n" {
		t.Fatalf("streamed %q", l)
	}
	appendFile(t, path, crilog("8 stderr F bye"))
	f.rt.setState("a2", exited)
	if l := next(); l != "bye\n" {
		t.Fatalf("streamed %q", l)
	}
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("unexpected line %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the response did not end after the container exited")
	}
}

// TestContainerLogsHandlerClientGone checks that a follow ends when the
// client goes away.
func TestContainerLogsHandlerClientGone(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Clock = nil
	done := make(chan struct{})
	h := ContainerLogsHandler(cfg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/containerLogs/ns/web/app?follow=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("zero\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "zero\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler kept following after the client left")
	}
}

// flushLog records a response's writes ("w") and flushes ("f").
type flushLog struct {
	*httptest.ResponseRecorder
	calls string
}

func (f *flushLog) Write(p []byte) (int, error) { f.calls += "w"; return f.ResponseRecorder.Write(p) }
func (f *flushLog) Flush()                      { f.calls += "f"; f.ResponseRecorder.Flush() }

// Every write of log content is flushed at once, as upstream's flushwriter
// does: the API server's websocket log reader drops bytes that reach it
// together with the end of the chunked body, so a short log left in the
// response buffer until the handler returns came back empty.
func TestContainerLogsHandlerFlushesEveryWrite(t *testing.T) {
	f := newFixture(t)
	w := &flushLog{ResponseRecorder: httptest.NewRecorder()}
	ContainerLogsHandler(f.config()).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/containerLogs/ns/web/app", nil))
	if w.Code != http.StatusOK || w.Body.String() != "zero\ntwo\nfour\nsix\n" {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
	// The headers' flush, then each line's write and flush.
	if want := "f" + strings.Repeat("wf", 4); w.calls != want {
		t.Errorf("writes and flushes %q, want %q", w.calls, want)
	}
}
