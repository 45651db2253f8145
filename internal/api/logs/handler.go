package logs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Pods finds a pod by namespace/name (the kubelet's pod manager has
// GetByFullName). For a static pod the request names its mirror pod, whose
// name is the static pod's.
type Pods interface {
	GetByFullName(namespace, name string) (*v1.Pod, bool)
}

// Statuses returns a pod's status as the kubelet last computed it (the
// status manager has Get).
type Statuses interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

// Config is what the log handlers read from.
type Config struct {
	Pods Pods
	// Runtime lists a pod's containers (by the pod UID and container name
	// labels) and gives each one's state and log path.
	Runtime runtimeapi.RuntimeServiceClient
	// Statuses, optional, gives the container statuses that choose which
	// instance's log to read, and the waiting reasons reported, as
	// upstream; without it (or before a pod has a status) they are built
	// from the runtime's instances.
	Statuses Statuses
	// Clock is "now" for sinceSeconds and the follow poll; nil means real.
	Clock clock.Clock
	// NodeLogDir is the directory /logs/ serves; "" means /var/log.
	NodeLogDir string
	// SplitStreams is the PodLogsQuerySplitStreams feature gate (alpha, off
	// by default): with it, stream=Stdout|Stderr selects one stream.
	SplitStreams bool
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.NodeLogDir == "" {
		c.NodeLogDir = "/var/log"
	}
	return c
}

// ContainerLogsHandler serves /containerLogs/{namespace}/{pod}/{container}
// with upstream's query parameters, status codes and messages.
func ContainerLogsHandler(cfg Config) http.Handler {
	return &containerLogs{cfg: cfg.withDefaults()}
}

type containerLogs struct {
	cfg Config
}

const containerLogsPrefix = "/containerLogs/"

// httpError is an error response: its status code and body.
type httpError struct {
	code int
	msg  string
}

// target is what a valid request reads: a container instance's log, with
// the streams it asked for (a nil writer drops a stream).
type target struct {
	pod            *v1.Pod
	container      string
	containerID    string
	opts           *v1.PodLogOptions
	stdout, stderr io.Writer
}

func (h *containerLogs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, containerLogsPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	ctx := r.Context()
	tg, herr := h.prepare(ctx, parts[0], parts[1], parts[2], r.URL.Query(), fw)
	if herr != nil {
		writeError(w, herr.code, herr.msg)
		return
	}
	// From here on, as upstream, the response is committed: a failure is
	// reported in the body.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fw.Flush()
	opts := readOptions(tg.opts, h.cfg.Clock.Now())
	if err := h.stream(ctx, tg.containerID, opts, tg.stdout, tg.stderr); err != nil && ctx.Err() == nil {
		klog.V(2).InfoS("Container log stream failed", "pod", klog.KObj(tg.pod), "container", tg.container, "err", err)
		_, _ = io.WriteString(w, err.Error())
	}
}

// prepare checks a request in upstream's order (path, query, pod,
// container, stream) and chooses the container instance to read.
func (h *containerLogs) prepare(ctx context.Context, namespace, podName, containerName string, query url.Values, out io.Writer) (*target, *httpError) {
	fail := func(code int, msg string) (*target, *httpError) {
		return nil, &httpError{code: code, msg: msg}
	}
	switch {
	case podName == "":
		return fail(http.StatusBadRequest, `{"message": "Missing podID."}`)
	case containerName == "":
		return fail(http.StatusBadRequest, `{"message": "Missing container name."}`)
	case namespace == "":
		return fail(http.StatusBadRequest, `{"message": "Missing podNamespace."}`)
	}
	opts, err := decodeLogOptions(query)
	if err != nil {
		klog.V(2).InfoS("Cannot decode container log query", "query", query.Encode(), "err", err)
		return fail(http.StatusBadRequest, `{"message": "Unable to decode query."}`)
	}
	if h.cfg.SplitStreams && opts.Stream == nil && len(query) > 0 {
		all := v1.LogStreamAll
		opts.Stream = &all // the API's defaulting
	}
	if errs := validateLogOptions(opts); len(errs) > 0 {
		klog.V(2).InfoS("Invalid container log query", "query", query.Encode(), "err", errs.ToAggregate())
		return fail(http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
	}
	pod, ok := h.cfg.Pods.GetByFullName(namespace, podName)
	if !ok {
		return fail(http.StatusNotFound, fmt.Sprintf("pod %q does not exist", podName))
	}
	spec, kind, ok := specContainer(pod, containerName)
	if !ok {
		return fail(http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", containerName, podName))
	}
	tg := &target{pod: pod, container: containerName, opts: opts, stdout: out, stderr: out}
	if stream := opts.Stream; stream != nil && *stream != v1.LogStreamAll {
		switch {
		case !h.cfg.SplitStreams:
			return fail(http.StatusBadRequest, fmt.Sprintf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *stream))
		case *stream == v1.LogStreamStdout:
			tg.stderr = nil
		default:
			tg.stdout = nil
		}
	}
	st, err := h.apiStatus(ctx, pod, spec, kind)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	if tg.containerID, err = chooseContainer(pod.Name, st, containerName, opts.Previous); err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	return tg, nil
}

// stream reads the log file of the container instance containerID.
func (h *containerLogs) stream(ctx context.Context, containerID string, opts Options, stdout, stderr io.Writer) error {
	id := podutil.RuntimeContainerID(containerID)
	resp, err := h.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		klog.V(4).InfoS("Cannot get container status for its logs", "containerID", containerID, "err", err)
		return fmt.Errorf("unable to retrieve container logs for %v", containerID)
	}
	logPath := resp.GetStatus().GetLogPath()
	if logPath == "" {
		return fmt.Errorf("container %v has no log file", containerID)
	}
	return readLogs(ctx, h.cfg.Clock, logPath, id, opts, h.cfg.Runtime, stdout, stderr)
}

// flushWriter flushes the response after every write, as upstream's
// flushwriter does, through any wrapping of the ResponseWriter. Each write
// then leaves in its own chunk, ahead of the chunked body's terminator: the
// API server's websocket log reader (wsstream messageCopy) drops the bytes
// of a read that also returns io.EOF, which is what Go's chunked reader
// returns when the last data chunk and the terminator arrive together, so
// a short log buffered until the handler returned came back empty over
// websockets (conformance: "Pods should support retrieving logs from the
// container over websockets").
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		f.Flush()
	}
	return n, err
}

func (f *flushWriter) Flush() {
	if err := f.rc.Flush(); err != nil {
		klog.V(5).InfoS("Cannot flush the log response", "err", err)
	}
}

// writeError writes msg as a plain-text error, without a trailing newline.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// NodeLogsHandler serves /logs/: the files under NodeLogDir, with directory
// listings, as upstream's file server. Symbolic links are followed only
// where they stay inside NodeLogDir (/var/log/containers links into
// /var/log/pods); others are forbidden.
func NodeLogsHandler(cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	files := http.StripPrefix("/logs/", http.FileServer(containedDir(cfg.NodeLogDir)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		files.ServeHTTP(w, r)
	})
}

// containedDir is an http.FileSystem over a directory that nothing, not even
// a symbolic link, can leave.
type containedDir string

func (d containedDir) Open(name string) (http.File, error) {
	if strings.ContainsRune(name, 0) || (filepath.Separator != '/' && strings.ContainsRune(name, filepath.Separator)) {
		return nil, os.ErrNotExist
	}
	root, err := filepath.EvalSymlinks(string(d))
	if err != nil {
		return nil, err
	}
	full := filepath.Join(root, filepath.FromSlash(path.Clean("/"+name)))
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(root, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		klog.V(2).InfoS("Refusing a node log path outside the log directory", "path", name, "target", resolved)
		return nil, os.ErrPermission
	}
	f, err := os.Open(resolved)
	if err != nil {
		return nil, err
	}
	return f, nil
}
