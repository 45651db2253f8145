package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// HealthCheck is one named check behind /healthz.
type HealthCheck struct {
	Name  string
	Check func() error
}

// PodSource lists the pods with their current status.
type PodSource interface {
	List() []*v1.Pod
}

// StatusSource returns a pod's current status.
type StatusSource interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

// Healthz serves /healthz: "ok" when every check passes, else 500 with
// the failing checks, as upstream's healthz handler.
func Healthz(checks []HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		for _, c := range checks {
			if err := c.Check(); err != nil {
				failed = append(failed, fmt.Sprintf("[-]%s failed: %v", c.Name, err))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			klog.V(2).InfoS("healthz check failed", "checks", failed)
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s\nhealthz check failed\n", strings.Join(failed, "\n"))
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// Pods serves /pods: a v1 PodList of the desired pods with live status.
func Pods(pods PodSource, statuses StatusSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for _, p := range pods.List() {
			cp := p.DeepCopy()
			if s, ok := statuses.Get(p.UID); ok {
				cp.Status = s
			}
			list.Items = append(list.Items, *cp)
		}
		if list.Items == nil {
			list.Items = []v1.Pod{}
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(&list); err != nil {
			klog.ErrorS(err, "Cannot encode /pods response")
		}
	})
}

// HealthzMux is the healthz port's handler.
func HealthzMux(checks []HealthCheck) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/healthz", Healthz(checks))
	return mux
}

// Timeouts are an HTTP server's connection limits.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (slow clients).
	ReadHeader time.Duration
	// Read and Write bound reading a whole request and writing its
	// response (streams included).
	Read, Write time.Duration
	// Idle closes a keep-alive connection with no request in flight.
	Idle time.Duration
}

// DefaultTimeouts are upstream's kubelet and read-only servers' (idle 90 s,
// matching http.DefaultTransport's keep-alive, read and write 4 h), plus a
// 10 s bound on reading headers; the healthz server gets them too.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 4 * time.Hour, Write: 4 * time.Hour, Idle: 90 * time.Second}

// NewHTTPServer returns a server for h with the given timeouts and
// upstream's 1 MiB header limit.
func NewHTTPServer(h http.Handler, t Timeouts) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle, MaxHeaderBytes: 1 << 20}
}

// Serve listens on addr and serves h until ctx ends, with DefaultTimeouts.
// Listen errors are returned at once so the caller can fail start-up
// clearly.
func Serve(ctx context.Context, name, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	srv := NewHTTPServer(h, DefaultTimeouts)
	run(ctx, name, ln, srv, func() error { return srv.Serve(ln) })
	return nil
}

// run serves until ctx ends, then shuts srv down.
func run(ctx context.Context, name string, ln net.Listener, srv *http.Server, serve func() error) {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	go func() {
		klog.InfoS("Starting server", "name", name, "address", ln.Addr().String())
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Server stopped", "name", name)
		}
	}()
}
