//go:build integration

package streaming

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// livePod is a busybox pod run through containerd's CRI, with the v1.Pod
// the fake pod manager returns for it.
type livePod struct {
	pod *v1.Pod
}

// testContainers are the containers of the live pod: "main" sleeps, "cat"
// echoes what is attached to its stdin, "shell" is a shell on a tty, "web"
// serves /www on port 8080.
var testContainers = []v1.Container{
	{Name: "main", Command: []string{"sleep", "3600"}},
	{Name: "cat", Command: []string{"cat"}, Stdin: true},
	{Name: "shell", Command: []string{"sh"}, Stdin: true, TTY: true},
	{Name: "web", Command: []string{"sh", "-c", "mkdir -p /www && echo hello-from-httpd > /www/index.html && exec httpd -f -p 8080 -h /www"}},
}

// startLivePod runs a sandbox with testContainers, labelled as the kubelet
// labels what it creates; cleanup removes it when the test ends.
func startLivePod(t *testing.T, rs runtimeapi.RuntimeServiceClient) *livePod {
	t.Helper()
	name := framework.UniqueName("streaming")
	cfg := framework.PodSandboxConfig(t, name)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cfg.Metadata.Namespace, UID: types.UID(cfg.Metadata.Uid)},
		Spec:       v1.PodSpec{Containers: testContainers},
	}
	maps.Copy(cfg.Labels, criconfig.SandboxLabels(pod))
	lp := &livePod{pod: pod}
	sandboxID := framework.RunPodSandbox(t, rs, cfg)
	ctx := framework.Ctx(t)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		resp, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId:  sandboxID,
			SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: c.Name},
				Image:    &runtimeapi.ImageSpec{Image: framework.BusyboxImage},
				Command:  c.Command,
				Labels:   criconfig.ContainerLabels(pod, c),
				LogPath:  c.Name + ".log",
				Stdin:    c.Stdin,
				Tty:      c.TTY,
			},
		})
		if err != nil {
			t.Fatalf("CreateContainer %s: %v", c.Name, err)
		}
		if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
			t.Fatalf("StartContainer %s: %v", c.Name, err)
		}
	}
	return lp
}

// liveServer serves Handler for lp on loopback.
func liveServer(t *testing.T, rs runtimeapi.RuntimeServiceClient, lp *livePod) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(Config{Pods: newFakePods(lp.pod), Runtime: rs, StreamIdleTimeout: time.Minute}))
	t.Cleanup(srv.Close)
	return srv
}

func TestStreamingAgainstContainerd(t *testing.T) {
	rs, _ := framework.NewCRIClient(t)
	lp := startLivePod(t, rs)
	srv := liveServer(t, rs, lp)
	restCfg := &rest.Config{Host: srv.URL}

	t.Run("exec over SPDY", func(t *testing.T) { testSPDYExec(t, srv, restCfg, lp) })
	t.Run("attach over SPDY", func(t *testing.T) { testSPDYAttach(t, srv, restCfg, lp) })
	t.Run("portForward over SPDY", func(t *testing.T) { testPortForward(t, srv, restCfg, lp) })
	t.Run("run", func(t *testing.T) { testRun(t, srv, lp) })
	t.Run("exec over WebSocket", func(t *testing.T) { testWebSocketExec(t, srv, restCfg, lp) })
	t.Run("portForward over WebSocket", func(t *testing.T) { testWebSocketPortForward(t, srv, lp) })
	t.Run("lookup errors", func(t *testing.T) { testLiveErrors(t, srv, lp) })
	t.Run("aborted streams leak nothing", func(t *testing.T) { testAbortedStreamsLeak(t, srv, restCfg, lp) })
}

func execURL(srv *httptest.Server, verb string, lp *livePod, container string, withUID bool, query url.Values) *url.URL {
	path := "/" + verb + "/" + lp.pod.Namespace + "/" + lp.pod.Name
	if withUID {
		path += "/" + string(lp.pod.UID)
	}
	path += "/" + container
	u, _ := url.Parse(srv.URL + path)
	u.RawQuery = query.Encode()
	return u
}

func streamQuery(cmd []string, stdin, stdout, stderr, tty bool) url.Values {
	q := url.Values{}
	for _, c := range cmd {
		q.Add("command", c)
	}
	for k, on := range map[string]bool{"input": stdin, "output": stdout, "error": stderr, "tty": tty} {
		if on {
			q.Set(k, "1")
		}
	}
	return q
}

// syncBuffer is a buffer written by a stream and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testSPDYExec(t *testing.T, srv *httptest.Server, restCfg *rest.Config, lp *livePod) {
	tests := []struct {
		name       string
		cmd        []string
		stdin      string
		stderr     bool
		tty        bool
		withUID    bool
		wantStdout string
		wantStderr string
		wantExit   int
	}{
		{name: "echo to stdout", cmd: []string{"echo", "hello"}, wantStdout: "hello\n"},
		{name: "echo with uid in path", cmd: []string{"echo", "hello"}, withUID: true, wantStdout: "hello\n"},
		{name: "cat copies stdin", cmd: []string{"cat"}, stdin: "from stdin\nsecond line\n", wantStdout: "from stdin\nsecond line\n"},
		{name: "stderr", cmd: []string{"sh", "-c", "echo out; echo oops >&2"}, stderr: true, wantStdout: "out\n", wantStderr: "oops\n"},
		{name: "tty", cmd: []string{"sh", "-c", "test -t 1 && echo is-a-tty"}, tty: true, wantStdout: "is-a-tty\r\n"},
		{name: "exit code", cmd: []string{"sh", "-c", "echo bye; exit 3"}, wantStdout: "bye\n", wantExit: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := execURL(srv, "exec", lp, "main", tc.withUID, streamQuery(tc.cmd, tc.stdin != "", true, tc.stderr, tc.tty))
			exe, err := remotecommand.NewSPDYExecutor(restCfg, http.MethodPost, u)
			if err != nil {
				t.Fatalf("NewSPDYExecutor: %v", err)
			}
			var stdout, stderr syncBuffer
			opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
			if tc.stdin != "" {
				opts.Stdin = strings.NewReader(tc.stdin)
			}
			if tc.stderr {
				opts.Stderr = &stderr
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = exe.StreamWithContext(ctx, opts)
			if tc.wantExit != 0 {
				var exitErr utilexec.ExitError
				if !errors.As(err, &exitErr) || exitErr.ExitStatus() != tc.wantExit {
					t.Fatalf("stream error %v, want exit status %d", err, tc.wantExit)
				}
			} else if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if got := stdout.String(); got != tc.wantStdout {
				t.Errorf("stdout %q, want %q", got, tc.wantStdout)
			}
			if got := stderr.String(); got != tc.wantStderr {
				t.Errorf("stderr %q, want %q", got, tc.wantStderr)
			}
		})
	}
}

// waitFor polls until buf holds want or the deadline passes.
func waitFor(t *testing.T, buf *syncBuffer, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q never contained %q", buf.String(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testSPDYAttach(t *testing.T, srv *httptest.Server, restCfg *rest.Config, lp *livePod) {
	tests := []struct {
		name      string
		container string
		tty       bool
		input     string
		want      string
	}{
		{name: "cat without tty", container: "cat", input: "attached hello\n", want: "attached hello\n"},
		{name: "shell with tty", container: "shell", tty: true, input: "echo attached-$((40+2))\n", want: "attached-42"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := execURL(srv, "attach", lp, tc.container, false, streamQuery(nil, true, true, !tc.tty, tc.tty))
			exe, err := remotecommand.NewSPDYExecutor(restCfg, http.MethodPost, u)
			if err != nil {
				t.Fatalf("NewSPDYExecutor: %v", err)
			}
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			var stdout, stderr syncBuffer
			opts := remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout, Tty: tc.tty}
			if !tc.tty {
				opts.Stderr = &stderr
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- exe.StreamWithContext(ctx, opts) }()
			go func() { _, _ = io.WriteString(stdinW, tc.input) }()
			waitFor(t, &stdout, tc.want, 20*time.Second)
			// An attach ends when the client goes away; the container keeps running.
			cancel()
			stdinW.Close()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("attach did not end after the client cancelled")
			}
			st, err := lpRun(srv, lp, tc.container, "echo -n ok")
			if err != nil || st != "ok" {
				t.Errorf("container %s after detaching: %v %v", tc.container, st, err)
			}
		})
	}
}

// lpRun runs cmd in container through /run.
func lpRun(srv *httptest.Server, lp *livePod, container, cmd string) (string, error) {
	resp, err := http.Post(srv.URL+"/run/"+lp.pod.Namespace+"/"+lp.pod.Name+"/"+container+"?cmd="+url.QueryEscape(cmd), "", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), err
}

func testPortForward(t *testing.T, srv *httptest.Server, restCfg *rest.Config, lp *livePod) {
	for _, withUID := range []bool{false, true} {
		t.Run(fmt.Sprintf("uid in path %v", withUID), func(t *testing.T) {
			path := "/portForward/" + lp.pod.Namespace + "/" + lp.pod.Name
			if withUID {
				path += "/" + string(lp.pod.UID)
			}
			u, _ := url.Parse(srv.URL + path)
			transport, upgrader, err := spdy.RoundTripperFor(restCfg)
			if err != nil {
				t.Fatalf("RoundTripperFor: %v", err)
			}
			dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
			stop, ready := make(chan struct{}), make(chan struct{})
			var errOut syncBuffer
			fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, &errOut)
			if err != nil {
				t.Fatalf("portforward: %v", err)
			}
			fwDone := make(chan error, 1)
			go func() { fwDone <- fw.ForwardPorts() }()
			defer func() {
				close(stop)
				<-fwDone
			}()
			select {
			case <-ready:
			case err := <-fwDone:
				t.Fatalf("ForwardPorts: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatal("port forward never ready")
			}
			ports, err := fw.GetPorts()
			if err != nil || len(ports) != 1 {
				t.Fatalf("GetPorts: %v %v", ports, err)
			}
			local := fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local)
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			var body string
			framework.Eventually(t, 20*time.Second, 200*time.Millisecond, "GET "+local+" through the port forward", func() (bool, error) {
				resp, err := client.Get(local)
				if err != nil {
					return false, err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				body = string(b)
				return err == nil && resp.StatusCode == http.StatusOK, fmt.Errorf("status %d body %q err %v", resp.StatusCode, body, err)
			})
			if body != "hello-from-httpd\n" {
				t.Errorf("body %q, want %q (port forward stderr %q)", body, "hello-from-httpd\n", errOut.String())
			}
		})
	}
}

func testRun(t *testing.T, srv *httptest.Server, lp *livePod) {
	tests := []struct {
		name        string
		path        string
		cmd         string
		wantStatus  int
		wantBody    string
		wantType    string
		bodyPrefix  bool
		wantMissing bool
	}{
		{name: "echo hi", path: lp.pod.Namespace + "/" + lp.pod.Name + "/main", cmd: "echo hi", wantStatus: http.StatusOK, wantBody: "hi\n", wantType: "application/json"},
		{name: "stdout then stderr", path: lp.pod.Namespace + "/" + lp.pod.Name + "/main", cmd: "sh -c echo${IFS}err>&2;echo${IFS}out", wantStatus: http.StatusOK, wantBody: "out\nerr\n", wantType: "application/json"},
		{name: "uid in path", path: lp.pod.Namespace + "/" + lp.pod.Name + "/" + string(lp.pod.UID) + "/main", cmd: "echo hi", wantStatus: http.StatusOK, wantBody: "hi\n", wantType: "application/json"},
		{name: "non-zero exit", path: lp.pod.Namespace + "/" + lp.pod.Name + "/main", cmd: "false", wantStatus: http.StatusInternalServerError, wantBody: "command 'false' exited with 1: ", wantType: "text/plain; charset=utf-8"},
		{name: "unknown container", path: lp.pod.Namespace + "/" + lp.pod.Name + "/nope", cmd: "echo hi", wantStatus: http.StatusInternalServerError, wantBody: "container not found", bodyPrefix: true, wantType: "text/plain; charset=utf-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/run/"+tc.path+"?cmd="+url.QueryEscape(tc.cmd), "", nil)
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, b, tc.wantStatus)
			}
			if tc.bodyPrefix && !strings.Contains(string(b), tc.wantBody) || !tc.bodyPrefix && string(b) != tc.wantBody {
				t.Errorf("body %q, want %q", b, tc.wantBody)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
		})
	}
}

func testWebSocketExec(t *testing.T, srv *httptest.Server, restCfg *rest.Config, lp *livePod) {
	u := execURL(srv, "exec", lp, "main", false, streamQuery([]string{"echo", "hello"}, false, true, false, false))
	tests := []struct {
		name     string
		protocol string
		// mayBeRefused: containerd 1.6 answers v5 with 403, which must reach
		// the client as such; newer runtimes may speak it.
		mayBeRefused bool
	}{
		{name: "v4.channel.k8s.io", protocol: "v4.channel.k8s.io"},
		{name: "channel.k8s.io", protocol: "channel.k8s.io"},
		{name: "v5.channel.k8s.io", protocol: "v5.channel.k8s.io", mayBeRefused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exe, err := remotecommand.NewWebSocketExecutorForProtocols(restCfg, http.MethodGet, u.String(), tc.protocol)
			if err != nil {
				t.Fatalf("NewWebSocketExecutorForProtocols: %v", err)
			}
			var stdout syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout})
			if err != nil && tc.mayBeRefused && strings.Contains(err.Error(), "bad handshake (403 Forbidden)") {
				t.Logf("runtime refused %s: %v", tc.protocol, err)
				return
			}
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if got := stdout.String(); got != "hello\n" {
				t.Errorf("stdout %q, want %q", got, "hello\n")
			}
		})
	}
}

// testWebSocketPortForward speaks the legacy WebSocket port-forward
// protocol, whose ports come from the query: each port has a data and an
// error channel, each opened by a frame carrying the port.
func testWebSocketPortForward(t *testing.T, srv *httptest.Server, lp *livePod) {
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/portForward/" + lp.pod.Namespace + "/" + lp.pod.Name + "?port=8080"
	d := websocket.Dialer{Subprotocols: []string{"v4.channel.k8s.io"}, HandshakeTimeout: 10 * time.Second}
	var conn *websocket.Conn
	// httpd may still be starting: retry until it answers.
	framework.Eventually(t, 20*time.Second, 200*time.Millisecond, "HTTP answer through a WebSocket port forward", func() (bool, error) {
		c, resp, err := d.Dial(wsURL, nil)
		if err != nil {
			return false, fmt.Errorf("dial: %w (response %v)", err, resp)
		}
		conn = c
		got, err := wsHTTPGet(c)
		c.Close()
		if err != nil {
			return false, err
		}
		if !strings.Contains(got, "hello-from-httpd") {
			return false, fmt.Errorf("answer %q", got)
		}
		return true, nil
	})
	if conn.Subprotocol() != "v4.channel.k8s.io" {
		t.Errorf("negotiated %q, want v4.channel.k8s.io", conn.Subprotocol())
	}
}

// wsHTTPGet sends GET / on channel 0 and reads what comes back on it.
func wsHTTPGet(c *websocket.Conn) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	opened := map[byte]bool{}
	for len(opened) < 2 {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return "", fmt.Errorf("read port frames: %w", err)
		}
		if len(msg) != 3 || msg[1] != 8080&0xff || msg[2] != 8080>>8 {
			return "", fmt.Errorf("port frame %v, want channel and port 8080", msg)
		}
		opened[msg[0]] = true
	}
	if err := c.WriteMessage(websocket.BinaryMessage, append([]byte{0}, "GET / HTTP/1.0\r\n\r\n"...)); err != nil {
		return "", fmt.Errorf("write request: %w", err)
	}
	var data, errs strings.Builder
	for !strings.Contains(data.String(), "hello-from-httpd") {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return data.String(), fmt.Errorf("read answer (error channel %q): %w", errs.String(), err)
		}
		if len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case 0:
			data.Write(msg[1:])
		case 1:
			errs.Write(msg[1:])
		}
	}
	return data.String(), nil
}

func testLiveErrors(t *testing.T, srv *httptest.Server, lp *livePod) {
	ns, name := lp.pod.Namespace, lp.pod.Name
	upgrade := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"}}
	tests := []struct {
		name       string
		method     string
		path       string
		header     http.Header
		wantStatus int
		wantBody   string
	}{
		{name: "exec unknown pod", method: http.MethodPost, path: "/exec/" + ns + "/nope/main?command=ls&output=1", header: upgrade, wantStatus: http.StatusNotFound, wantBody: "pod does not exist"},
		{name: "exec without streams", method: http.MethodPost, path: "/exec/" + ns + "/" + name + "/main?command=ls", header: upgrade, wantStatus: http.StatusBadRequest, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "exec unknown container", method: http.MethodPost, path: "/exec/" + ns + "/" + name + "/nope?command=ls&output=1", header: upgrade, wantStatus: http.StatusInternalServerError, wantBody: `container not found ("nope")`},
		{name: "exec other uid", method: http.MethodPost, path: "/exec/" + ns + "/" + name + "/other-uid/main?command=ls&output=1", header: upgrade, wantStatus: http.StatusInternalServerError, wantBody: `container not found ("main")`},
		{name: "exec without upgrade", method: http.MethodPost, path: "/exec/" + ns + "/" + name + "/main?command=ls&output=1", wantStatus: upgradeRequiredStatus, wantBody: upgradeRequiredText},
		{name: "attach without upgrade", method: http.MethodGet, path: "/attach/" + ns + "/" + name + "/cat?output=1", wantStatus: upgradeRequiredStatus, wantBody: upgradeRequiredText},
		{name: "portForward other uid", method: http.MethodPost, path: "/portForward/" + ns + "/" + name + "/other-uid", header: upgrade, wantStatus: http.StatusNotFound, wantBody: "pod not found"},
		{name: "portForward without upgrade", method: http.MethodGet, path: "/portForward/" + ns + "/" + name, wantStatus: upgradeRequiredStatus, wantBody: upgradeRequiredText},
		{name: "run unknown pod", method: http.MethodPost, path: "/run/" + ns + "/nope/main?cmd=ls", wantStatus: http.StatusNotFound, wantBody: "pod does not exist"},
		{name: "run with GET", method: http.MethodGet, path: "/run/" + ns + "/" + name + "/main?cmd=ls", wantStatus: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, b, tc.wantStatus)
			}
			if !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("body %q, want it to contain %q", b, tc.wantBody)
			}
		})
	}
}

// fdCount is the number of this process's open file descriptors.
func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("read /proc/self/fd: %v", err)
	}
	return len(ents)
}

// openAndAbort runs cat in the main container through an exec stream,
// checks one line makes the round trip, then drops the client connection.
// ready is called once the stream is open or has failed.
func openAndAbort(srv *httptest.Server, restCfg *rest.Config, lp *livePod, i int, ready func(), abort <-chan struct{}) error {
	var once sync.Once
	markReady := func() { once.Do(ready) }
	defer markReady()
	u := execURL(srv, "exec", lp, "main", false, streamQuery([]string{"cat"}, true, true, false, false))
	exe, err := remotecommand.NewSPDYExecutor(restCfg, http.MethodPost, u)
	if err != nil {
		return fmt.Errorf("stream %d: NewSPDYExecutor: %w", i, err)
	}
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var stdout syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout})
	}()
	line := fmt.Sprintf("ping %d\n", i)
	go func() { _, _ = io.WriteString(stdinW, line) }()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(stdout.String(), line) {
		select {
		case err := <-done:
			return fmt.Errorf("stream %d ended before echoing (stdout %q): %v", i, stdout.String(), err)
		case <-deadline:
			return fmt.Errorf("stream %d: no echo within 30s", i)
		case <-time.After(10 * time.Millisecond):
		}
	}
	markReady()
	<-abort
	cancel()
	stdinW.Close()
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("stream %d did not end after its client was cancelled", i)
	}
}

func testAbortedStreamsLeak(t *testing.T, srv *httptest.Server, restCfg *rest.Config, lp *livePod) {
	const streams, batch = 100, 10
	run := func(n int) (openGoroutines int) {
		var errs []error
		var mu sync.Mutex
		for start := 0; start < n; start += batch {
			var opened, finished sync.WaitGroup
			abort := make(chan struct{})
			for i := start; i < start+batch && i < n; i++ {
				opened.Add(1)
				finished.Add(1)
				go func() {
					defer finished.Done()
					if err := openAndAbort(srv, restCfg, lp, i, opened.Done, abort); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}()
			}
			opened.Wait() // every stream of the batch is open (or failed)
			openGoroutines = max(openGoroutines, runtime.NumGoroutine())
			close(abort)
			finished.Wait()
		}
		if len(errs) > 0 {
			t.Fatalf("%d of %d streams failed, first: %v", len(errs), n, errs[0])
		}
		return openGoroutines
	}
	settle := func() {
		http.DefaultClient.CloseIdleConnections()
		time.Sleep(200 * time.Millisecond)
	}

	run(batch) // warm up the client, server and gRPC paths
	settle()
	baseGoroutines, baseFDs := runtime.NumGoroutine(), fdCount(t)
	peak := run(streams)

	// Slack for background goroutines of the runtime client and test
	// server; a leak of 100 streams would be hundreds.
	const slack = 3
	var goroutines, fds int
	deadline := time.Now().Add(20 * time.Second)
	for {
		settle()
		goroutines, fds = runtime.NumGoroutine(), fdCount(t)
		if goroutines <= baseGoroutines+slack && fds <= baseFDs+slack {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after %d aborted streams: %d goroutines (baseline %d), %d fds (baseline %d)\n%s",
				streams, goroutines, baseGoroutines, fds, baseFDs, buf[:runtime.Stack(buf, true)])
		}
	}
	// The runtime ends the processes whose streams went away: at most the
	// cat container's own cat is left (the pod may share a PID namespace).
	framework.Eventually(t, 20*time.Second, 200*time.Millisecond, "aborted exec processes to end", func() (bool, error) {
		out, err := lpRun(srv, lp, "main", "ps -o comm")
		if err != nil {
			return false, err
		}
		n := strings.Count(out, "\ncat\n")
		return n <= 1, fmt.Errorf("%d cat processes left: %q", n, out)
	})
	t.Logf("%d aborted exec streams: goroutines baseline %d, peak with %d open %d, after %d; fds baseline %d, after %d",
		streams, baseGoroutines, batch, peak, goroutines, baseFDs, fds)
}
