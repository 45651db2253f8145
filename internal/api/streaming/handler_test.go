package streaming

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// fakeRuntime serves the CRI calls the handlers make from fixed sandboxes
// and containers, and records the stream requests.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient // calls not listed here panic

	containers []*runtimeapi.Container
	sandboxes  []*runtimeapi.PodSandbox
	streamURL  string
	streamErr  error
	execSync   *runtimeapi.ExecSyncResponse
	execErr    error

	mu       sync.Mutex
	requests []proto.Message // Exec, Attach, PortForward and ExecSync requests
}

func (f *fakeRuntime) record(m proto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, m)
}

func (f *fakeRuntime) recorded() []proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]proto.Message(nil), f.requests...)
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range f.containers {
		if st := req.GetFilter().GetState(); st != nil && st.State != c.State {
			continue
		}
		if labelsMatch(c.Labels, req.GetFilter().GetLabelSelector()) {
			resp.Containers = append(resp.Containers, c)
		}
	}
	return resp, nil
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, sb := range f.sandboxes {
		if st := req.GetFilter().GetState(); st != nil && st.State != sb.State {
			continue
		}
		if labelsMatch(sb.Labels, req.GetFilter().GetLabelSelector()) {
			resp.Items = append(resp.Items, sb)
		}
	}
	return resp, nil
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest, _ ...grpc.CallOption) (*runtimeapi.ExecResponse, error) {
	f.record(req)
	return &runtimeapi.ExecResponse{Url: f.streamURL}, f.streamErr
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest, _ ...grpc.CallOption) (*runtimeapi.AttachResponse, error) {
	f.record(req)
	return &runtimeapi.AttachResponse{Url: f.streamURL}, f.streamErr
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest, _ ...grpc.CallOption) (*runtimeapi.PortForwardResponse, error) {
	f.record(req)
	return &runtimeapi.PortForwardResponse{Url: f.streamURL}, f.streamErr
}

func (f *fakeRuntime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	f.record(req)
	return f.execSync, f.execErr
}

// Fixture: pod ns/web (UID uid-1) and pod ns/idle (UID uid-3, nothing
// running); the runtime also runs pod uid-2's "app".
var (
	webPod = &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"},
		Spec: v1.PodSpec{
			InitContainers:      []v1.Container{{Name: "init", TTY: true}},
			Containers:          []v1.Container{{Name: "app"}, {Name: "term", TTY: true}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", TTY: true}}},
		},
	}
	idlePod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "idle", UID: "uid-3"}}
)

func fakeContainer(id, uid, name string, state runtimeapi.ContainerState, created int64) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:        id,
		State:     state,
		CreatedAt: created,
		Labels:    map[string]string{criconfig.LabelPodUID: uid, criconfig.LabelContainerName: name},
	}
}

func fakeSandbox(id, uid string, state runtimeapi.PodSandboxState, created int64) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: created, Labels: map[string]string{criconfig.LabelPodUID: uid}}
}

func newFakeRuntime(streamURL string) *fakeRuntime {
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return &fakeRuntime{
		streamURL: streamURL,
		containers: []*runtimeapi.Container{
			fakeContainer("app-old", "uid-1", "app", running, 1),
			fakeContainer("app-new", "uid-1", "app", running, 2),
			fakeContainer("app-dead", "uid-1", "app", exited, 3),
			fakeContainer("term-1", "uid-1", "term", running, 1),
			fakeContainer("init-1", "uid-1", "init", running, 1),
			fakeContainer("debug-1", "uid-1", "debug", running, 1),
			fakeContainer("orphan-1", "uid-1", "orphan", running, 1),
			fakeContainer("gone-1", "uid-1", "gone", exited, 1),
			fakeContainer("other-app", "uid-2", "app", running, 1),
		},
		sandboxes: []*runtimeapi.PodSandbox{
			fakeSandbox("sb-old", "uid-1", ready, 1),
			fakeSandbox("sb-new", "uid-1", ready, 2),
			fakeSandbox("sb-dead", "uid-1", notReady, 3),
			fakeSandbox("sb-idle", "uid-3", notReady, 1),
		},
	}
}

// newFakeServer serves Handler over a fake runtime whose streams go to an
// echoing backend.
func newFakeServer(t *testing.T) (*httptest.Server, *fakeRuntime) {
	t.Helper()
	be := startBackend(t, upgradeAndEcho)
	rt := newFakeRuntime(be.url("/stream/token").String())
	srv := httptest.NewServer(Handler(Config{Pods: newFakePods(webPod, idlePod), Runtime: rt}))
	t.Cleanup(srv.Close)
	return srv, rt
}

var (
	spdyHeaders      = http.Header{"Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"}}
	websocketHeaders = http.Header{"Upgrade": {"websocket"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Protocol": {"v4.channel.k8s.io"}}
)

func TestStreamRequestsReachRuntime(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		header http.Header
		want   proto.Message
	}{
		{name: "exec stdout", path: "/exec/ns/web/app?command=ls&command=-l&output=1",
			want: &runtimeapi.ExecRequest{ContainerId: "app-new", Cmd: []string{"ls", "-l"}, Stdout: true}},
		{name: "exec all streams", path: "/exec/ns/web/app?command=sh&input=1&output=1&error=1",
			want: &runtimeapi.ExecRequest{ContainerId: "app-new", Cmd: []string{"sh"}, Stdin: true, Stdout: true, Stderr: true}},
		{name: "exec tty drops stderr", path: "/exec/ns/web/app?command=sh&input=1&output=1&error=1&tty=1",
			want: &runtimeapi.ExecRequest{ContainerId: "app-new", Cmd: []string{"sh"}, Stdin: true, Stdout: true, Tty: true}},
		{name: "exec true is only 1", path: "/exec/ns/web/app?command=ls&output=1&error=true",
			want: &runtimeapi.ExecRequest{ContainerId: "app-new", Cmd: []string{"ls"}, Stdout: true}},
		{name: "exec with uid", path: "/exec/ns/web/uid-1/app?command=ls&output=1",
			want: &runtimeapi.ExecRequest{ContainerId: "app-new", Cmd: []string{"ls"}, Stdout: true}},
		{name: "exec over websocket", path: "/exec/ns/web/app?command=ls&output=1", header: websocketHeaders,
			want: &runtimeapi.ExecRequest{ContainerId: "app-new", Cmd: []string{"ls"}, Stdout: true}},
		{name: "attach tty from spec", path: "/attach/ns/web/term?input=1&output=1",
			want: &runtimeapi.AttachRequest{ContainerId: "term-1", Stdin: true, Stdout: true, Tty: true}},
		{name: "attach query tty ignored", path: "/attach/ns/web/uid-1/app?output=1&error=1&tty=1",
			want: &runtimeapi.AttachRequest{ContainerId: "app-new", Stdout: true}},
		{name: "attach init container", path: "/attach/ns/web/init?output=1",
			want: &runtimeapi.AttachRequest{ContainerId: "init-1", Stdout: true, Tty: true}},
		{name: "attach ephemeral container", path: "/attach/ns/web/debug?output=1",
			want: &runtimeapi.AttachRequest{ContainerId: "debug-1", Stdout: true, Tty: true}},
		{name: "portForward spdy", path: "/portForward/ns/web",
			want: &runtimeapi.PortForwardRequest{PodSandboxId: "sb-new"}},
		{name: "portForward spdy ignores port query", path: "/portForward/ns/web/uid-1?port=80",
			want: &runtimeapi.PortForwardRequest{PodSandboxId: "sb-new"}},
		{name: "portForward websocket ports", path: "/portForward/ns/web?port=80&port=443,8080", header: websocketHeaders,
			want: &runtimeapi.PortForwardRequest{PodSandboxId: "sb-new", Port: []int32{80, 443, 8080}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Registered first, so it runs after the servers are closed.
			t.Cleanup(goroutineBaseline(t))
			srv, rt := newFakeServer(t)
			header := spdyHeaders
			if tc.header != nil {
				header = tc.header
			}
			conn, br, resp := dialUpgrade(t, srv, tc.path, maps.Clone(header))
			if resp.StatusCode != http.StatusSwitchingProtocols {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d (%q), want 101", resp.StatusCode, body)
			}
			if _, err := io.WriteString(conn, "hi"); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, conn, br, 7); got != "earlyhi" {
				t.Errorf("stream carried %q, want %q", got, "earlyhi")
			}
			got := rt.recorded()
			if len(got) != 1 || !proto.Equal(got[0], tc.want) {
				t.Errorf("runtime got %v, want %v", got, tc.want)
			}
			conn.Close()
		})
	}
}

func TestStreamRequestErrors(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		path      string
		header    http.Header
		streamErr error
		streamURL *string
		// wantCall: the runtime was asked for a stream.
		wantCall   bool
		wantStatus int
		wantBody   string
		wantHeader http.Header
	}{
		{name: "exec unknown pod", path: "/exec/ns/nope/app?output=1", wantStatus: http.StatusNotFound, wantBody: "pod does not exist"},
		{name: "exec no streams", path: "/exec/ns/web/app?command=ls", wantStatus: http.StatusBadRequest, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "exec unknown container", path: "/exec/ns/web/nope?output=1", wantStatus: http.StatusInternalServerError, wantBody: `container not found ("nope")`},
		{name: "exec exited container", path: "/exec/ns/web/gone?output=1", wantStatus: http.StatusInternalServerError, wantBody: `container not found ("gone")`},
		{name: "exec uid of another pod", path: "/exec/ns/web/uid-2/app?output=1", wantStatus: http.StatusInternalServerError, wantBody: `container not found ("app")`},
		{name: "exec without upgrade", path: "/exec/ns/web/app?output=1", header: http.Header{}, wantStatus: upgradeRequiredStatus, wantBody: upgradeRequiredText},
		{name: "exec put", method: http.MethodPut, path: "/exec/ns/web/app?output=1", wantStatus: http.StatusMethodNotAllowed},
		{name: "attach unknown pod", path: "/attach/ns/nope/app?output=1", wantStatus: http.StatusNotFound, wantBody: "pod does not exist"},
		{name: "attach no streams", path: "/attach/ns/web/app", wantStatus: http.StatusBadRequest, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "attach container not in spec", path: "/attach/ns/web/orphan?output=1", wantStatus: http.StatusInternalServerError, wantBody: "container orphan not found in pod web_ns"},
		{name: "attach uid of another pod", path: "/attach/ns/web/uid-2/app?output=1", wantStatus: http.StatusInternalServerError, wantBody: `container not found ("app")`},
		{name: "attach without upgrade", path: "/attach/ns/web/app?output=1", header: http.Header{}, wantStatus: upgradeRequiredStatus, wantBody: upgradeRequiredText},
		{name: "portForward unknown pod", path: "/portForward/ns/nope", wantStatus: http.StatusNotFound, wantBody: "pod does not exist"},
		{name: "portForward other uid", path: "/portForward/ns/web/uid-2", wantStatus: http.StatusNotFound, wantBody: "pod not found"},
		{name: "portForward no ready sandbox", path: "/portForward/ns/idle", wantStatus: http.StatusInternalServerError, wantBody: "pod not found: no ready sandbox"},
		{name: "portForward websocket without port", path: "/portForward/ns/web", header: websocketHeaders, wantStatus: http.StatusBadRequest, wantBody: `query parameter "port" is required`},
		{name: "portForward websocket empty port", path: "/portForward/ns/web?port=", header: websocketHeaders, wantStatus: http.StatusBadRequest, wantBody: `query parameter "port" cannot be empty`},
		{name: "portForward websocket bad port", path: "/portForward/ns/web?port=http", header: websocketHeaders, wantStatus: http.StatusBadRequest, wantBody: `unable to parse "http" as a port`},
		{name: "portForward websocket port zero", path: "/portForward/ns/web?port=80,0", header: websocketHeaders, wantStatus: http.StatusBadRequest, wantBody: `port "80,0" must be > 0`},
		{name: "portForward websocket port too big", path: "/portForward/ns/web?port=65536", header: websocketHeaders, wantStatus: http.StatusBadRequest, wantBody: `unable to parse "65536" as a port`},
		{name: "portForward without upgrade", path: "/portForward/ns/web", header: http.Header{}, wantStatus: upgradeRequiredStatus, wantBody: upgradeRequiredText},
		{name: "runtime not found", path: "/exec/ns/web/app?output=1", streamErr: status.Error(codes.NotFound, "no such container"), wantCall: true,
			wantStatus: http.StatusNotFound, wantBody: "no such container"},
		{name: "runtime too many streams", path: "/attach/ns/web/app?output=1", streamErr: status.Error(codes.ResourceExhausted, "maximum number of in-flight requests exceeded"), wantCall: true,
			wantStatus: http.StatusTooManyRequests, wantBody: "maximum number of in-flight requests exceeded", wantHeader: http.Header{"Retry-After": {"60"}}},
		{name: "runtime unavailable", path: "/portForward/ns/web", streamErr: status.Error(codes.Unavailable, "down"), wantCall: true,
			wantStatus: http.StatusInternalServerError, wantBody: "down"},
		{name: "runtime gives empty URL", path: "/exec/ns/web/app?output=1", streamURL: new(""), wantCall: true,
			wantStatus: http.StatusInternalServerError, wantBody: "runtime returned bad streaming URL for exec: no host"},
		{name: "runtime gives relative URL", path: "/exec/ns/web/app?output=1", streamURL: new("/exec/token"), wantCall: true,
			wantStatus: http.StatusInternalServerError, wantBody: "runtime returned bad streaming URL for exec: no host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, rt := newFakeServer(t)
			rt.streamErr = tc.streamErr
			if tc.streamURL != nil {
				rt.streamURL = *tc.streamURL
			}
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			header := tc.header
			if header == nil {
				header = spdyHeaders
			}
			for k, v := range header {
				req.Header[k] = v
			}
			if len(header) > 0 {
				req.Header.Set("Connection", "Upgrade")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, tc.path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("body %q, want it to contain %q", body, tc.wantBody)
			}
			for k := range tc.wantHeader {
				if got := resp.Header.Get(k); got != tc.wantHeader.Get(k) {
					t.Errorf("header %s %q, want %q", k, got, tc.wantHeader.Get(k))
				}
			}
			if called := len(rt.recorded()) > 0; called != tc.wantCall {
				t.Errorf("runtime asked for a stream: %v, want %v", called, tc.wantCall)
			}
		})
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		execSync   *runtimeapi.ExecSyncResponse
		execErr    error
		wantReq    *runtimeapi.ExecSyncRequest
		wantStatus int
		wantBody   string
		wantType   string
	}{
		{name: "stdout then stderr", path: "/run/ns/web/app?cmd=sh%20-c%20x",
			execSync:   &runtimeapi.ExecSyncResponse{Stdout: []byte("out\n"), Stderr: []byte("err\n")},
			wantReq:    &runtimeapi.ExecSyncRequest{ContainerId: "app-new", Cmd: []string{"sh", "-c", "x"}},
			wantStatus: http.StatusOK, wantBody: "out\nerr\n", wantType: "application/json"},
		{name: "split on every space", path: "/run/ns/web/uid-1/app?cmd=echo%20a%20%20b",
			execSync:   &runtimeapi.ExecSyncResponse{Stdout: []byte("a  b\n")},
			wantReq:    &runtimeapi.ExecSyncRequest{ContainerId: "app-new", Cmd: []string{"echo", "a", "", "b"}},
			wantStatus: http.StatusOK, wantBody: "a  b\n", wantType: "application/json"},
		{name: "no output", path: "/run/ns/web/app?cmd=true",
			execSync:   &runtimeapi.ExecSyncResponse{},
			wantReq:    &runtimeapi.ExecSyncRequest{ContainerId: "app-new", Cmd: []string{"true"}},
			wantStatus: http.StatusOK, wantBody: "", wantType: ""},
		{name: "non-zero exit", path: "/run/ns/web/app?cmd=ls%20/nope",
			execSync:   &runtimeapi.ExecSyncResponse{ExitCode: 2, Stdout: []byte("partial"), Stderr: []byte("ls: /nope: No such file")},
			wantReq:    &runtimeapi.ExecSyncRequest{ContainerId: "app-new", Cmd: []string{"ls", "/nope"}},
			wantStatus: http.StatusInternalServerError, wantBody: "command 'ls /nope' exited with 2: ls: /nope: No such file", wantType: "text/plain; charset=utf-8"},
		{name: "runtime error", path: "/run/ns/web/app?cmd=ls",
			execErr:    status.Error(codes.Unknown, "boom"),
			wantReq:    &runtimeapi.ExecSyncRequest{ContainerId: "app-new", Cmd: []string{"ls"}},
			wantStatus: http.StatusInternalServerError, wantBody: "run in container app-new: rpc error: code = Unknown desc = boom", wantType: "text/plain; charset=utf-8"},
		{name: "unknown pod", path: "/run/ns/nope/app?cmd=ls",
			wantStatus: http.StatusNotFound, wantBody: "pod does not exist", wantType: "text/plain; charset=utf-8"},
		{name: "unknown container", path: "/run/ns/web/nope?cmd=ls",
			wantStatus: http.StatusInternalServerError, wantBody: `run in web_ns/nope: container not found ("nope")`, wantType: "text/plain; charset=utf-8"},
		{name: "GET not allowed", method: http.MethodGet, path: "/run/ns/web/app?cmd=ls",
			wantStatus: http.StatusMethodNotAllowed, wantBody: "Method Not Allowed\n", wantType: "text/plain; charset=utf-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, rt := newFakeServer(t)
			rt.execSync, rt.execErr = tc.execSync, tc.execErr
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, srv.URL+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus || string(body) != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
			got := rt.recorded()
			if tc.wantReq == nil {
				if len(got) != 0 {
					t.Errorf("runtime got %v, want no call", got)
				}
				return
			}
			if len(got) != 1 || !proto.Equal(got[0], tc.wantReq) {
				t.Errorf("runtime got %v, want %v", got, tc.wantReq)
			}
		})
	}
}
