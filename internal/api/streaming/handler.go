package streaming

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Query parameters of the streaming protocol, as the API server sends them
// to kubelets (input/output/error, not the PodExecOptions field names).
const (
	paramCommand = "command"
	paramStdin   = "input"
	paramStdout  = "output"
	paramStderr  = "error"
	paramTTY     = "tty"
	paramPort    = "port"
	// paramRunCommand is /run's command line, split on spaces (legacy).
	paramRunCommand = "cmd"
)

// runtimeCallTimeout bounds each unary CRI call but ExecSync, which /run
// leaves unbounded as upstream does.
const runtimeCallTimeout = 2 * time.Minute

// retryAfterSeconds is sent with 429 when the runtime has too many streams
// in flight: the lifetime of an unused streaming URL.
const retryAfterSeconds = "60"

// upgradeRequiredStatus and upgradeRequiredText answer a stream request
// without "Connection: upgrade". Upstream's proxy raises a bad request with
// that text, which the kubelet's error responder sends as a 500; so do we.
const (
	upgradeRequiredStatus = http.StatusInternalServerError
	upgradeRequiredText   = "Upgrade request required"
)

// Pods finds the pods the kubelet manages.
type Pods interface {
	GetByFullName(namespace, name string) (*v1.Pod, bool)
}

// Config configures Handler.
type Config struct {
	Pods Pods
	// Runtime serves Exec, Attach, PortForward, ExecSync, ListContainers and
	// ListPodSandbox.
	Runtime runtimeapi.RuntimeServiceClient
	// StreamIdleTimeout (streamingConnectionIdleTimeout) closes a proxied
	// connection that carried no bytes for that long; zero disables it.
	StreamIdleTimeout time.Duration
	// StreamTLSConfig dials https streaming URLs; nil verifies the runtime's
	// certificate against the system roots.
	StreamTLSConfig *tls.Config
}

type server struct {
	cfg Config
}

// Handler serves /exec, /attach, /portForward (GET and POST, upgrade
// requests proxied to the runtime) and /run (POST, ExecSync). Mount it at
// those four path prefixes of an HTTP/1.1-capable server: upgrades need to
// take over the connection.
func Handler(cfg Config) http.Handler {
	s := &server{cfg: cfg}
	mux := http.NewServeMux()
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", s.exec)
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", s.attach)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", s.attach)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}", s.portForward)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.run)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{uid}/{container}", s.run)
	return mux
}

// target is what a request's path names.
type target struct {
	namespace, pod, container string
	uid                       types.UID
}

func targetOf(r *http.Request) target {
	return target{
		namespace: r.PathValue("namespace"),
		pod:       r.PathValue("pod"),
		container: r.PathValue("container"),
		uid:       types.UID(r.PathValue("uid")),
	}
}

// fullName is the kubelet's pod full name, name_namespace.
func (t target) fullName() string { return t.pod + "_" + t.namespace }

// streamOptions are exec/attach's stdin/stdout/stderr/tty switches.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// streamOptionsFrom reads the switches as upstream: "1" is true, stderr is
// dropped with a tty, and at least one stream is required.
func streamOptionsFrom(r *http.Request) (streamOptions, error) {
	q := r.URL.Query()
	o := streamOptions{
		stdin:  q.Get(paramStdin) == "1",
		stdout: q.Get(paramStdout) == "1",
		stderr: q.Get(paramStderr) == "1",
		tty:    q.Get(paramTTY) == "1",
	}
	if o.tty && o.stderr {
		klog.V(4).InfoS("Exec with tty and stderr is not supported, bypassing stderr")
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// portForwardPorts reads the ports of a WebSocket port forward from the
// query (required there, as upstream); SPDY clients name ports per stream.
func portForwardPorts(r *http.Request) ([]int32, error) {
	if !isWebSocketRequest(r) {
		return nil, nil
	}
	values := r.URL.Query()[paramPort]
	if len(values) == 0 {
		return nil, fmt.Errorf("query parameter %q is required", paramPort)
	}
	var ports []int32
	for _, v := range values {
		if v == "" {
			return nil, fmt.Errorf("query parameter %q cannot be empty", paramPort)
		}
		for p := range strings.SplitSeq(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %w", v, err)
			}
			if n < 1 {
				return nil, fmt.Errorf("port %q must be > 0", v)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// containerStream is what exec and attach share: the request's target,
// its stream options, the pod and its running container.
type containerStream struct {
	t    target
	opts streamOptions
	pod  *v1.Pod
	id   string
}

// resolveContainerStream parses an exec or attach request and finds its
// running container, answering the request itself when it cannot.
func (s *server) resolveContainerStream(w http.ResponseWriter, r *http.Request, verb string) (containerStream, bool) {
	cs := containerStream{t: targetOf(r)}
	var err error
	if cs.opts, err = streamOptionsFrom(r); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return cs, false
	}
	var ok bool
	if cs.pod, ok = s.cfg.Pods.GetByFullName(cs.t.namespace, cs.t.pod); !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return cs, false
	}
	if cs.id, err = s.runningContainer(r.Context(), cs.t, cs.pod); err != nil {
		writeRuntimeError(w, fmt.Errorf("%s %s/%s: %w", verb, cs.t.fullName(), cs.t.container, err))
		return cs, false
	}
	return cs, true
}

func (s *server) exec(w http.ResponseWriter, r *http.Request) {
	cs, ok := s.resolveContainerStream(w, r, "exec in")
	if !ok {
		return
	}
	ctx, opts, pod, id := r.Context(), cs.opts, cs.pod, cs.id
	if !isUpgradeRequest(r) {
		writeText(w, upgradeRequiredStatus, upgradeRequiredText)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	resp, err := s.cfg.Runtime.Exec(cctx, &runtimeapi.ExecRequest{
		ContainerId: id,
		Cmd:         r.URL.Query()[paramCommand],
		Tty:         opts.tty,
		Stdin:       opts.stdin,
		Stdout:      opts.stdout,
		Stderr:      opts.stderr,
	})
	cancel()
	if err != nil {
		writeRuntimeError(w, fmt.Errorf("exec in container %s: %w", id, err))
		return
	}
	s.proxy(w, r, "exec", pod, resp.GetUrl())
}

func (s *server) attach(w http.ResponseWriter, r *http.Request) {
	cs, ok := s.resolveContainerStream(w, r, "attach to")
	if !ok {
		return
	}
	ctx, t, opts, pod, id := r.Context(), cs.t, cs.opts, cs.pod, cs.id
	// A process's tty cannot change once it runs: the spec decides, not
	// the request.
	tty, ok := specTTY(pod, t.container)
	if !ok {
		writeRuntimeError(w, fmt.Errorf("container %s not found in pod %s", t.container, t.fullName()))
		return
	}
	if !isUpgradeRequest(r) {
		writeText(w, upgradeRequiredStatus, upgradeRequiredText)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	resp, err := s.cfg.Runtime.Attach(cctx, &runtimeapi.AttachRequest{
		ContainerId: id,
		Stdin:       opts.stdin,
		Stdout:      opts.stdout,
		Stderr:      opts.stderr,
		Tty:         tty,
	})
	cancel()
	if err != nil {
		writeRuntimeError(w, fmt.Errorf("attach to container %s: %w", id, err))
		return
	}
	s.proxy(w, r, "attach", pod, resp.GetUrl())
}

func (s *server) portForward(w http.ResponseWriter, r *http.Request) {
	t := targetOf(r)
	ports, err := portForwardPorts(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	pod, ok := s.cfg.Pods.GetByFullName(t.namespace, t.pod)
	if !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return
	}
	if t.uid != "" && t.uid != pod.UID {
		writeError(w, http.StatusNotFound, errors.New("pod not found"))
		return
	}
	ctx := r.Context()
	sandboxID, err := s.readySandbox(ctx, pod.UID)
	if err != nil {
		writeRuntimeError(w, fmt.Errorf("port forward to %s: %w", t.fullName(), err))
		return
	}
	if !isUpgradeRequest(r) {
		writeText(w, upgradeRequiredStatus, upgradeRequiredText)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	resp, err := s.cfg.Runtime.PortForward(cctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: ports})
	cancel()
	if err != nil {
		writeRuntimeError(w, fmt.Errorf("port forward to sandbox %s: %w", sandboxID, err))
		return
	}
	s.proxy(w, r, "portForward", pod, resp.GetUrl())
}

// run executes the "cmd" query parameter, split on spaces, with ExecSync
// and answers its stdout followed by its stderr.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	t := targetOf(r)
	pod, ok := s.cfg.Pods.GetByFullName(t.namespace, t.pod)
	if !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return
	}
	cmd := strings.Split(r.URL.Query().Get(paramRunCommand), " ")
	ctx := r.Context()
	id, err := s.runningContainer(ctx, t, pod)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("run in %s/%s: %w", t.fullName(), t.container, err))
		return
	}
	resp, err := s.cfg.Runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd})
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("run in container %s: %w", id, err))
		return
	}
	if resp.ExitCode != 0 {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), resp.ExitCode, resp.Stderr))
		return
	}
	out := append(resp.Stdout, resp.Stderr...)
	if len(out) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(out); err != nil {
		klog.FromContext(ctx).V(2).Info("Writing run output failed", "pod", klog.KObj(pod), "err", err)
	}
}

// proxy hands the request to the runtime's streaming server at rawURL.
func (s *server) proxy(w http.ResponseWriter, r *http.Request, kind string, pod *v1.Pod, rawURL string) {
	u, err := url.Parse(rawURL)
	if err == nil && u.Host == "" {
		err = errors.New("no host")
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("runtime returned bad streaming URL for %s: %w", kind, err))
		return
	}
	klog.FromContext(r.Context()).V(3).Info("Proxying stream to runtime", "kind", kind, "pod", klog.KObj(pod), "runtime", u.Host)
	p := &upgradeProxy{target: u, idleTimeout: s.cfg.StreamIdleTimeout, tlsConfig: s.cfg.StreamTLSConfig}
	p.ServeHTTP(w, r)
}

// specTTY is whether the spec gives container name a tty.
func specTTY(pod *v1.Pod, name string) (bool, bool) {
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == name {
			return c.TTY, true
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name {
			return c.TTY, true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i]; c.Name == name {
			return c.TTY, true
		}
	}
	return false, false
}

// writeError answers code with err's text, as upstream's handlers do.
func writeError(w http.ResponseWriter, code int, err error) {
	writeText(w, code, err.Error())
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text)
}

// writeRuntimeError maps a runtime error to HTTP as upstream: NotFound is
// 404, ResourceExhausted (too many streams in flight) 429, else 500.
func writeRuntimeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch status.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		w.Header().Set("Retry-After", retryAfterSeconds)
		code = http.StatusTooManyRequests
	}
	klog.V(2).InfoS("Stream request failed", "status", code, "err", err)
	writeError(w, code, err)
}
