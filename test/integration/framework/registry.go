package framework

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
)

// PrivateRegistry serves the loopback registry (127.0.0.1:5000) behind
// basic auth for user and pass on a free loopback port, and returns the
// registry's name as images use it ("localhost:PORT") and the count of
// requests it let through.
func PrivateRegistry(t testing.TB, user, pass string) (string, *atomic.Int64) {
	t.Helper()
	target, _ := url.Parse("http://127.0.0.1:5000")
	proxy := httputil.NewSingleHostReverseProxy(target)
	var authorized atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for the private registry: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return "localhost:" + port, &authorized
}
