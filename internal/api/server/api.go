package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	// EnableDebugging installs logs, exec, attach, portForward and run
	// (enableDebuggingHandlers); EnableProfiling installs /debug/pprof.
	EnableDebugging, EnableProfiling bool
}

// APIMux is the handler of the authenticated port, before the auth filter.
func APIMux(cfg APIConfig) *http.ServeMux {
	mux := ReadOnlyMux(cfg)
	mux.Handle("/runningpods/", runningPods(cfg.RunningPods))
	mux.Handle("/configz", configz(cfg.Config))
	if cfg.EnableDebugging {
		handle(mux, "/containerLogs/", cfg.ContainerLogs)
		handle(mux, "/logs/", cfg.NodeLogs)
		for _, p := range []string{"/exec/", "/attach/", "/portForward/", "/run/"} {
			handle(mux, p, cfg.Streaming)
		}
	}
	if cfg.EnableProfiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// ReadOnlyMux is the handler of the read-only port: pods, health, stats
// and metrics, without authentication.
func ReadOnlyMux(cfg APIConfig) *http.ServeMux {
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

// ServeTLS listens on addr and serves h over TLS until ctx ends.
func ServeTLS(ctx context.Context, name, addr string, h http.Handler, tlsConfig *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	// Idle keep-alive connections (the API server pools them) are closed
	// after 90 s, as upstream's kubelet server does.
	srv := &http.Server{Handler: h, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 90 * time.Second, MaxHeaderBytes: 1 << 20}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	go func() {
		klog.InfoS("Starting server", "name", name, "address", ln.Addr().String())
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Server stopped", "name", name)
		}
	}()
	return nil
}
