package logs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
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
	namespace, podName, containerName := parts[0], parts[1], parts[2]
	switch {
	case podName == "":
		writeError(w, http.StatusBadRequest, `{"message": "Missing podID."}`)
		return
	case containerName == "":
		writeError(w, http.StatusBadRequest, `{"message": "Missing container name."}`)
		return
	case namespace == "":
		writeError(w, http.StatusBadRequest, `{"message": "Missing podNamespace."}`)
		return
	}
	apiOpts, err := decodeLogOptions(r.URL.Query())
	if err != nil {
		klog.V(2).InfoS("Cannot decode container log query", "query", r.URL.RawQuery, "err", err)
		writeError(w, http.StatusBadRequest, `{"message": "Unable to decode query."}`)
		return
	}
	if h.cfg.SplitStreams && apiOpts.Stream == nil && len(r.URL.Query()) > 0 {
		all := v1.LogStreamAll
		apiOpts.Stream = &all // the API's defaulting
	}
	if errs := validateLogOptions(apiOpts); len(errs) > 0 {
		klog.V(2).InfoS("Invalid container log query", "query", r.URL.RawQuery, "err", errs.ToAggregate())
		writeError(w, http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
		return
	}
	pod, ok := h.cfg.Pods.GetByFullName(namespace, podName)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("pod %q does not exist", podName))
		return
	}
	spec, kind, ok := specContainer(pod, containerName)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", containerName, podName))
		return
	}
	var stdout, stderr io.Writer = w, w
	if stream := apiOpts.Stream; stream != nil && *stream != v1.LogStreamAll {
		switch {
		case !h.cfg.SplitStreams:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *stream))
			return
		case *stream == v1.LogStreamStdout:
			stderr = nil
		default:
			stdout = nil
		}
	}

	ctx := r.Context()
	st, err := h.apiStatus(ctx, pod, spec, kind)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	containerID, err := chooseContainer(pod.Name, st, containerName, apiOpts.Previous)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// From here on, as upstream, the response is committed: a failure is
	// reported in the body.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	opts := readOptions(apiOpts, h.cfg.Clock.Now())
	if err := h.stream(ctx, containerID, opts, stdout, stderr); err != nil && ctx.Err() == nil {
		klog.V(2).InfoS("Container log stream failed", "pod", klog.KObj(pod), "container", containerName, "err", err)
		_, _ = io.WriteString(w, err.Error())
	}
}

// stream reads the log file of the container instance containerID.
func (h *containerLogs) stream(ctx context.Context, containerID string, opts Options, stdout, stderr io.Writer) error {
	id := runtimeID(containerID)
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
