package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The endpoint table of upstream v1.36's pkg/kubelet/server/server.go:
// what each path answers on the kubelet API port under each switch, and
// on the read-only port. "ok" is the installed handler; 404 is a path
// upstream does not install; 405 bodies are upstream's.
func TestEndpointGating(t *testing.T) {
	ok := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok "+name) })
	}
	base := APIConfig{
		Pods: podList{}, Statuses: statusMap{}, Config: map[string]string{},
		RunningPods:   func(context.Context) ([]v1.Pod, error) { return nil, nil },
		ContainerLogs: ok("containerLogs"), NodeLogs: ok("logs"), Streaming: ok("streaming"), Summary: ok("summary"),
		Metrics: ok("metrics"), ResourceMetrics: ok("resource"), ProbeMetrics: ok("probes"),
	}
	all := DebugHandlers{Enabled: true, SystemLogs: true, Profiling: true, Flags: true}
	const (
		debugOff     = "405 Debug endpoints are disabled."
		logsOff      = "405 logs endpoint is disabled."
		profilingOff = "405 profiling endpoint is disabled."
		flagsOff     = "405 flags endpoint is disabled."
	)
	type want map[string]string // path -> "200 <body prefix>" or "<code> <body>"
	alwaysServed := want{
		"/healthz": "200 ok", "/pods": "200 {", "/stats/summary": "200 ok summary",
		"/metrics": "200 ok metrics", "/metrics/resource": "200 ok resource", "/metrics/probes": "200 ok probes",
	}
	cases := []struct {
		name     string
		debug    DebugHandlers
		readOnly bool
		want     want
	}{
		{name: "defaults: everything", debug: all, want: want{
			"/exec/ns/pod/c": "200 ok streaming", "/attach/ns/pod/c": "200 ok streaming", "/portForward/ns/pod": "200 ok streaming",
			"/run/ns/pod/c": "200 ok streaming", "/containerLogs/ns/pod/c": "200 ok containerLogs",
			"/runningpods/": "200 {", "/configz": "200 {", "/logs/": "200 ok logs", "/logs/syslog": "200 ok logs",
			"/debug/pprof/": "200 <html>", "/debug/flags/v": "406 unsupported http method",
		}},
		{name: "enableDebuggingHandlers false", debug: DebugHandlers{SystemLogs: true, Profiling: true, ContentionProfiling: true, Flags: true}, want: want{
			"/exec/ns/pod/c": debugOff, "/attach/ns/pod/c": debugOff, "/portForward/ns/pod": debugOff, "/run/ns/pod/c": debugOff,
			"/containerLogs/ns/pod/c": debugOff, "/runningpods/": debugOff, "/debug/pprof/": debugOff, "/debug/pprof/heap": debugOff,
			"/logs/": debugOff, "/logs/syslog": debugOff,
			// Installed with the debugging handlers only.
			"/configz": "404", "/debug/flags/v": "404",
		}},
		{name: "enableSystemLogHandler false", debug: DebugHandlers{Enabled: true, Profiling: true, Flags: true}, want: want{
			"/logs/": logsOff, "/logs/syslog": logsOff, "/exec/ns/pod/c": "200 ok streaming", "/debug/pprof/": "200 <html>",
		}},
		{name: "enableProfilingHandler false", debug: DebugHandlers{Enabled: true, SystemLogs: true, ContentionProfiling: true, Flags: true}, want: want{
			"/debug/pprof/": profilingOff, "/debug/pprof/profile": profilingOff, "/logs/": "200 ok logs",
		}},
		{name: "enableDebugFlagsHandler false", debug: DebugHandlers{Enabled: true, SystemLogs: true, Profiling: true}, want: want{
			"/debug/flags/v": flagsOff, "/debug/pprof/": "200 <html>",
		}},
		{name: "read-only port", debug: all, readOnly: true, want: want{
			"/exec/ns/pod/c": debugOff, "/attach/ns/pod/c": debugOff, "/portForward/ns/pod": debugOff, "/run/ns/pod/c": debugOff,
			"/containerLogs/ns/pod/c": debugOff, "/runningpods/": debugOff, "/debug/pprof/": debugOff, "/logs/": debugOff,
			"/configz": "404", "/debug/flags/v": "404",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Debug = tc.debug
			h := APIMux(cfg)
			if tc.readOnly {
				h = ReadOnlyMux(cfg)
			}
			paths := want{}
			for p, w := range alwaysServed {
				paths[p] = w
			}
			for p, w := range tc.want {
				paths[p] = w
			}
			for p, w := range paths {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
				code, body, _ := strings.Cut(w, " ")
				if strconv.Itoa(rec.Code) != code || !strings.HasPrefix(strings.TrimSpace(rec.Body.String()), body) {
					t.Errorf("GET %s = %d %q, want %s %q", p, rec.Code, firstLine(rec.Body.String()), code, body)
				}
			}
		})
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func TestBlockProfiling(t *testing.T) {
	cases := []struct {
		d    DebugHandlers
		want bool
	}{
		{DebugHandlers{Enabled: true, Profiling: true, ContentionProfiling: true}, true},
		{DebugHandlers{Enabled: true, Profiling: true}, false},
		{DebugHandlers{Enabled: true, ContentionProfiling: true}, false}, // only on top of pprof
		{DebugHandlers{Profiling: true, ContentionProfiling: true}, false},
	}
	for _, tc := range cases {
		if got := tc.d.BlockProfiling(); got != tc.want {
			t.Errorf("%+v: BlockProfiling = %v, want %v", tc.d, got, tc.want)
		}
	}
}

func TestDebugFlagsHandlerSetsVerbosity(t *testing.T) {
	var got string
	h := flagsHandler(func(v string) (string, error) { got = v; return "successfully set klog.logging.verbosity to " + v, nil })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("PUT", "/debug/flags/v", strings.NewReader("4")))
	if rec.Code != 200 || got != "4" || !strings.Contains(rec.Body.String(), "verbosity to 4") {
		t.Fatalf("PUT = %d %q (set %q)", rec.Code, rec.Body.String(), got)
	}
}

// upstream's values, on every server the kubelet runs.
func TestDefaultTimeouts(t *testing.T) {
	srv := NewHTTPServer(http.NotFoundHandler(), DefaultTimeouts)
	if srv.IdleTimeout != 90*time.Second || srv.ReadTimeout != 4*time.Hour || srv.WriteTimeout != 4*time.Hour ||
		srv.MaxHeaderBytes != 1<<20 || srv.ReadHeaderTimeout != 10*time.Second {
		t.Fatalf("server %+v", srv)
	}
}

// The timeouts act: an idle keep-alive connection and a client that never
// finishes its headers are both closed by the server.
func TestTimeoutsCloseConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(HealthzMux(nil), Timeouts{ReadHeader: 300 * time.Millisecond, Read: time.Second, Write: time.Second, Idle: 300 * time.Millisecond})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadAll(c) // returns once the server closes
		return err == nil
	}

	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if !closed(idle) {
		t.Fatal("an idle keep-alive connection stayed open")
	}

	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\n") // never ends
	if !closed(slow) {
		t.Fatal("a connection that never finished its headers stayed open")
	}
}
