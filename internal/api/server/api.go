package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
)

// APIConfig is what the kubelet API (port 10250) and the read-only port
// serve. Handlers left nil are not installed (404).
type APIConfig struct {
	Pods     PodSource
	Statuses StatusSource
	// RunningPods lists the pods the runtime runs (/runningpods/).
	RunningPods func(ctx context.Context) ([]v1.Pod, error)
	Checks      []HealthCheck
	// Config is the kubelet's configuration, for /configz.
	Config any

	ContainerLogs, NodeLogs, Streaming, Summary http.Handler
	Metrics, ResourceMetrics, ProbeMetrics      http.Handler
	// CadvisorMetrics serves /metrics/cadvisor.
	CadvisorMetrics http.Handler

	// Debug gates the debugging endpoints of the kubelet API.
	Debug DebugHandlers
}

// DebugHandlers are upstream's switches for the debugging endpoints.
type DebugHandlers struct {
	// Enabled is enableDebuggingHandlers: exec, attach, portForward, run,
	// containerLogs, configz and runningpods, and the switches below; off,
	// those paths (and /logs/ and /debug/pprof/) answer 405.
	Enabled bool
	// SystemLogs is enableSystemLogHandler: /logs/.
	SystemLogs bool
	// Profiling is enableProfilingHandler: /debug/pprof/.
	Profiling bool
	// ContentionProfiling is enableContentionProfiling: block profiling
	// (BlockProfileRate) on top of the pprof handlers.
	ContentionProfiling bool
	// Flags is enableDebugFlagsHandler: PUT /debug/flags/v sets the log
	// verbosity.
	Flags bool
}

// BlockProfiling reports whether the block profile must be turned on, as
// upstream does only with the pprof handlers installed. It is pure.
func (d DebugHandlers) BlockProfiling() bool {
	return d.Enabled && d.Profiling && d.ContentionProfiling
}

// Upstream's bodies for endpoints that exist but are turned off (405).
const (
	msgDebuggingDisabled = "Debug endpoints are disabled."
	msgLogsDisabled      = "logs endpoint is disabled."
	msgProfilingDisabled = "profiling endpoint is disabled."
	msgFlagsDisabled     = "flags endpoint is disabled."
)

// debuggingPaths answer "Debug endpoints are disabled." when
// enableDebuggingHandlers is off, and always on the read-only port
// (upstream's InstallDebuggingDisabledHandlers).
var debuggingPaths = []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/pprof/", "/logs/"}

// APIMux is the handler of the authenticated port, before the auth filter,
// with upstream v1.36's paths: the read-only ones, and the debugging
// endpoints as cfg.Debug says.
func APIMux(cfg APIConfig) *http.ServeMux {
	mux := baseMux(cfg)
	d := cfg.Debug
	if !d.Enabled {
		for _, p := range debuggingPaths {
			mux.Handle(p, disabled(msgDebuggingDisabled))
		}
		return mux
	}
	handle(mux, "/containerLogs/", cfg.ContainerLogs)
	for _, p := range []string{"/exec/", "/attach/", "/portForward/", "/run/"} {
		handle(mux, p, cfg.Streaming)
	}
	mux.Handle("/runningpods/", runningPods(cfg.RunningPods))
	mux.Handle("/configz", configz(cfg.Config))
	if d.SystemLogs {
		handle(mux, "/logs/", cfg.NodeLogs)
	} else {
		mux.Handle("/logs/", disabled(msgLogsDisabled))
	}
	if d.Profiling {
		mux.HandleFunc("/debug/pprof/", pprofHandler)
	} else {
		mux.Handle("/debug/pprof/", disabled(msgProfilingDisabled))
	}
	if d.Flags {
		mux.Handle("/debug/flags/v", flagsHandler(logs.GlogSetter))
	} else {
		mux.Handle("/debug/flags/v", disabled(msgFlagsDisabled))
	}
	return mux
}

// ReadOnlyMux is the handler of the read-only port: pods, health, stats
// and metrics, without authentication; the debugging paths answer 405 as
// upstream's read-only server does.
func ReadOnlyMux(cfg APIConfig) *http.ServeMux {
	mux := baseMux(cfg)
	for _, p := range debuggingPaths {
		mux.Handle(p, disabled(msgDebuggingDisabled))
	}
	return mux
}

// baseMux holds what both ports serve.
func baseMux(cfg APIConfig) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/pods", Pods(cfg.Pods, cfg.Statuses))
	mux.Handle("/pods/", Pods(cfg.Pods, cfg.Statuses))
	mux.Handle("/healthz", Healthz(cfg.Checks))
	handle(mux, "/stats/summary", cfg.Summary)
	handle(mux, "/metrics", cfg.Metrics)
	handle(mux, "/metrics/resource", cfg.ResourceMetrics)
	handle(mux, "/metrics/probes", cfg.ProbeMetrics)
	handle(mux, "/metrics/cadvisor", cfg.CadvisorMetrics)
	return mux
}

func disabled(msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, msg, http.StatusMethodNotAllowed)
	})
}

// pprofHandler serves /debug/pprof/<name> as upstream's kubelet does.
func pprofHandler(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}

// flagsHandler is upstream's StringFlagPutHandler: PUT a value, get the
// setter's answer; other methods are refused with 406.
func flagsHandler(set func(string) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain := func(code int, text string) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(code)
			fmt.Fprintln(w, text)
		}
		if r.Method != http.MethodPut {
			plain(http.StatusNotAcceptable, "unsupported http method")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		if err != nil {
			plain(http.StatusBadRequest, "error reading request body: "+err.Error())
			return
		}
		resp, err := set(string(body))
		if err != nil {
			plain(http.StatusBadRequest, err.Error())
			return
		}
		klog.InfoS("Log verbosity changed through /debug/flags/v", "response", resp)
		plain(http.StatusOK, resp)
	})
}

func handle(mux *http.ServeMux, pattern string, h http.Handler) {
	if h != nil {
		mux.Handle(pattern, h)
	}
}

func runningPods(list func(ctx context.Context) ([]v1.Pod, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if list == nil {
			http.NotFound(w, r)
			return
		}
		pods, err := list(r.Context())
		if err != nil {
			http.Error(w, fmt.Sprintf("failed to list running pods: %v", err), http.StatusInternalServerError)
			return
		}
		if pods == nil {
			pods = []v1.Pod{}
		}
		writeJSON(w, &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods})
	})
}

func configz(cfg any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"kubeletconfig": cfg})
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		klog.ErrorS(err, "Cannot encode response")
	}
}

// ServeTLS listens on addr and serves h over TLS until ctx ends, with
// upstream's server timeouts.
func ServeTLS(ctx context.Context, name, addr string, h http.Handler, tlsConfig *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	srv := NewHTTPServer(h, DefaultTimeouts)
	srv.TLSConfig = tlsConfig
	run(ctx, name, ln, srv, func() error { return srv.ServeTLS(ln, "", "") })
	return nil
}
