package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(strings.TrimPrefix(rawURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func TestHTTPProbe(t *testing.T) {
	var gotUA, gotHdr, gotHost string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotHdr, gotHost = r.UserAgent(), r.Header.Get("X-Custom"), r.Host
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/404", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) })
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("x", 50*1024)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/ok", port), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })

	ctr := &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	get := func(path string, p intstr.IntOrString, hdrs ...v1.HTTPHeader) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: p, HTTPHeaders: hdrs}}}
	}
	num := intstr.FromInt32(int32(port))
	tests := []struct {
		name      string
		probe     *v1.Probe
		want      Result
		warning   bool
		wantErr   bool
		outSubstr string
		maxOut    int
	}{
		{name: "200 success", probe: get("/ok", num), want: Success, outSubstr: "fine"},
		{name: "named port", probe: get("ok", intstr.FromString("web")), want: Success},
		{name: "unknown named port errors", probe: get("/ok", intstr.FromString("nope")), wantErr: true},
		{name: "404 failure", probe: get("/404", num), want: Failure, outSubstr: "statuscode: 404"},
		{name: "500 failure", probe: get("/500", num), want: Failure, outSubstr: "statuscode: 500"},
		{name: "same host redirect followed", probe: get("/same", num), want: Success, outSubstr: "fine"},
		{name: "other host redirect is warning", probe: get("/other", num), want: Success, warning: true, outSubstr: "Probe terminated redirects"},
		{name: "redirect loop fails", probe: get("/loop", num), want: Failure, outSubstr: "stopped after 10 redirects"},
		{name: "timeout fails", probe: get("/slow", num), want: Failure},
		{name: "body limited", probe: get("/big", num), want: Success, maxOut: maxOutput},
		{name: "closed port fails", probe: get("/ok", intstr.FromInt32(1)), want: Failure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := probeOnce(context.Background(), tc.probe, ctr, "", host, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if o.result != tc.want || o.warning != tc.warning {
				t.Fatalf("got %v warning=%v (%q), want %v warning=%v", o.result, o.warning, o.output, tc.want, tc.warning)
			}
			if !strings.Contains(o.output, tc.outSubstr) {
				t.Errorf("output %q does not contain %q", o.output, tc.outSubstr)
			}
			if tc.maxOut > 0 && len(o.output) > tc.maxOut {
				t.Errorf("output length %d > %d", len(o.output), tc.maxOut)
			}
		})
	}

	t.Run("headers and user agent", func(t *testing.T) {
		p := get("/ok", num, v1.HTTPHeader{Name: "X-Custom", Value: "v"}, v1.HTTPHeader{Name: "Host", Value: "example.test"})
		if r, _, err := RunProbe(context.Background(), p, nil, ctr, "", host, nil); err != nil || r != Success {
			t.Fatalf("got %v, %v", r, err)
		}
		if gotUA != UserAgent || gotHdr != "v" || gotHost != "example.test" {
			t.Errorf("ua=%q hdr=%q host=%q", gotUA, gotHdr, gotHost)
		}
		p = get("/ok", num, v1.HTTPHeader{Name: "User-Agent", Value: "mine"})
		if _, _, err := RunProbe(context.Background(), p, nil, ctr, "", host, nil); err != nil {
			t.Fatal(err)
		}
		if gotUA != "mine" {
			t.Errorf("user agent override: got %q", gotUA)
		}
	})
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := ln.Addr().(*net.TCPAddr).Port
	closedLn, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := closedLn.Addr().(*net.TCPAddr).Port
	closedLn.Close()
	ctr := &v1.Container{Ports: []v1.ContainerPort{{Name: "svc", ContainerPort: int32(open)}}}
	tests := []struct {
		name string
		port intstr.IntOrString
		host string
		want Result
	}{
		{name: "open port", port: intstr.FromInt32(int32(open)), want: Success},
		{name: "named port", port: intstr.FromString("svc"), want: Success},
		{name: "explicit host", port: intstr.FromInt32(int32(open)), host: "127.0.0.1", want: Success},
		{name: "closed port", port: intstr.FromInt32(int32(closed)), want: Failure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: tc.port, Host: tc.host}}}
			ip := "127.0.0.1"
			if tc.host != "" {
				ip = "192.0.2.1" // must not be used
			}
			r, out, err := RunProbe(context.Background(), p, nil, ctr, "", ip, nil)
			if err != nil || r != tc.want {
				t.Fatalf("got %v %q %v, want %v", r, out, err, tc.want)
			}
		})
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("good", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("bad", healthpb.HealthCheckResponse_NOT_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	bare, _ := net.Listen("tcp", "127.0.0.1:0")
	bareSrv := grpc.NewServer()
	go bareSrv.Serve(bare)
	defer bareSrv.Stop()
	barePort := int32(bare.Addr().(*net.TCPAddr).Port)

	str := func(s string) *string { return &s }
	tests := []struct {
		name      string
		port      int32
		service   *string
		want      Result
		outSubstr string
	}{
		{name: "overall serving", port: port, want: Success},
		{name: "named service serving", port: port, service: str("good"), want: Success},
		{name: "not serving", port: port, service: str("bad"), want: Failure, outSubstr: "NOT_SERVING"},
		{name: "unknown service", port: port, service: str("missing"), want: Failure},
		{name: "health not implemented", port: barePort, want: Failure, outSubstr: "does not implement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Probe{TimeoutSeconds: 2, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: tc.port, Service: tc.service}}}
			r, out, err := RunProbe(context.Background(), p, nil, &v1.Container{}, "", "127.0.0.1", nil)
			if err != nil || r != tc.want || !strings.Contains(out, tc.outSubstr) {
				t.Fatalf("got %v %q %v, want %v containing %q", r, out, err, tc.want, tc.outSubstr)
			}
		})
	}
}

// fakeRuntime scripts ExecSync by command name and records calls.
type fakeRuntime struct {
	fn func(req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error)
}

func (f *fakeRuntime) ExecSync(ctx context.Context, in *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	return f.fn(in)
}

func TestExecProbe(t *testing.T) {
	tests := []struct {
		name      string
		resp      *runtimeapi.ExecSyncResponse
		err       error
		want      Result
		wantErr   bool
		outSubstr string
	}{
		{name: "exit 0", resp: &runtimeapi.ExecSyncResponse{Stdout: []byte("ok")}, want: Success, outSubstr: "ok"},
		{name: "exit 1", resp: &runtimeapi.ExecSyncResponse{ExitCode: 1, Stderr: []byte("boom")}, want: Failure, outSubstr: "boom"},
		{name: "exit 2 no output", resp: &runtimeapi.ExecSyncResponse{ExitCode: 2}, want: Failure, outSubstr: "exited with 2"},
		{name: "runtime timeout", err: status.Error(codes.DeadlineExceeded, "deadline"), want: Failure, outSubstr: "timed out"},
		{name: "context timeout", err: context.DeadlineExceeded, want: Failure, outSubstr: "timed out"},
		{name: "runtime error", err: status.Error(codes.NotFound, "no container"), wantErr: true},
		{name: "output limited", resp: &runtimeapi.ExecSyncResponse{ExitCode: 1, Stdout: []byte(strings.Repeat("y", 20000))}, want: Failure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *runtimeapi.ExecSyncRequest
			rt := &fakeRuntime{fn: func(req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
				got = req
				return tc.resp, tc.err
			}}
			p := &v1.Probe{TimeoutSeconds: 4, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}}
			r, out, err := RunProbe(context.Background(), p, nil, &v1.Container{}, "cid", "", rt)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr {
				return
			}
			if r != tc.want || !strings.Contains(out, tc.outSubstr) || len(out) > maxOutput {
				t.Fatalf("got %v %q, want %v containing %q", r, out, tc.want, tc.outSubstr)
			}
			if got.ContainerId != "cid" || got.Timeout != 4 || got.Cmd[0] != "check" {
				t.Errorf("request = %+v", got)
			}
		})
	}
}

func TestProbeGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	tests := []struct {
		name  string
		pod   *v1.Pod
		probe *v1.Probe
		want  int64
	}{
		{name: "default", pod: &v1.Pod{}, want: 30},
		{name: "pod level", pod: &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: i(10)}}, probe: &v1.Probe{}, want: 10},
		{name: "probe level wins", pod: &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: i(10)}}, probe: &v1.Probe{TerminationGracePeriodSeconds: i(3)}, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProbeGracePeriod(tc.pod, tc.probe); got != tc.want {
				t.Errorf("got %d want %d", got, tc.want)
			}
		})
	}
}

func TestExpandCommand(t *testing.T) {
	c := &v1.Container{Env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "S", ValueFrom: &v1.EnvVarSource{}}}}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain", in: "echo", want: "echo"},
		{name: "defined", in: "x=$(A)", want: "x=1"},
		{name: "undefined kept", in: "$(B)", want: "$(B)"},
		// Upstream maps each env entry to its literal value, so a valueFrom
		// entry (not resolved for probes) expands to "".
		{name: "valueFrom is its empty literal", in: "[$(S)]", want: "[]"},
		{name: "escaped", in: "$$(A)", want: "$(A)"},
		{name: "unterminated", in: "$(A", want: "$(A"},
		{name: "trailing dollar", in: "a$", want: "a$"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podutil.ExpandCommandOnlyStatic([]string{tc.in}, c.Env)[0]; got != tc.want {
				t.Errorf("got %q want %q", got, tc.want)
			}
		})
	}
}
