package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

const (
	// UserAgent is sent by http and grpc probes unless overridden.
	UserAgent = "kube-probe/1.36"
	// maxOutput bounds how much of a response body / command output is kept.
	maxOutput = 10 * 1024
	// maxRedirects bounds same-host redirect chains.
	maxRedirects = 10
)

// execSlack is added to the exec timeout for the CRI call deadline so the
// runtime, not the client, normally reports the timeout.
var execSlack = 2 * time.Second

// outcome is the full result of one probe execution.
type outcome struct {
	result  Result
	warning bool // success, but worth a ProbeWarning event
	output  string
}

// RunProbe executes p once against container c and returns the result and a
// human readable output. A non-nil error means the probe could not be run
// (bad spec, missing runtime); such results should be discarded. pod is
// accepted for parity with the kubelet call site; podIP is the default host.
func RunProbe(ctx context.Context, p *v1.Probe, pod *v1.Pod, c *v1.Container, containerID string, podIP string, rt Runtime) (Result, string, error) {
	o, err := probeOnce(ctx, p, c, containerID, podIP, rt)
	return o.result, o.output, err
}

func probeOnce(ctx context.Context, p *v1.Probe, c *v1.Container, containerID, podIP string, rt Runtime) (outcome, error) {
	if p == nil {
		return outcome{result: Unknown}, errors.New("nil probe")
	}
	timeout := probeTimeout(p)
	switch {
	case p.Exec != nil:
		return execProbe(ctx, p.Exec, c, containerID, timeout, rt)
	case p.HTTPGet != nil:
		return httpProbe(ctx, p.HTTPGet, c, podIP, timeout)
	case p.TCPSocket != nil:
		return tcpProbe(ctx, p.TCPSocket, c, podIP, timeout)
	case p.GRPC != nil:
		return grpcProbe(ctx, p.GRPC, podIP, timeout)
	default:
		return outcome{result: Unknown}, errors.New("probe has no handler")
	}
}

func probeTimeout(p *v1.Probe) time.Duration {
	if p.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// resolvePort turns a numeric or named port into a number using c's ports.
func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	n := 0
	if port.Type == intstr.Int {
		n = port.IntValue()
	} else {
		found := false
		if c != nil {
			for _, cp := range c.Ports {
				if cp.Name == port.StrVal {
					n, found = int(cp.ContainerPort), true
					break
				}
			}
		}
		if !found {
			v, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return 0, fmt.Errorf("port %q not found in container ports", port.StrVal)
			}
			n = v
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d", n)
	}
	return n, nil
}

func limit(s string) string {
	if len(s) > maxOutput {
		return s[:maxOutput]
	}
	return s
}

func execProbe(ctx context.Context, e *v1.ExecAction, c *v1.Container, containerID string, timeout time.Duration, rt Runtime) (outcome, error) {
	if rt == nil {
		return outcome{result: Unknown}, errors.New("exec probe: no runtime configured")
	}
	if containerID == "" {
		return outcome{result: Unknown}, errors.New("exec probe: no container id")
	}
	cctx, cancel := context.WithTimeout(ctx, timeout+execSlack)
	defer cancel()
	resp, err := rt.ExecSync(cctx, &runtimeapi.ExecSyncRequest{
		ContainerId: containerID,
		Cmd:         probeCommand(e.Command, c),
		Timeout:     int64(timeout / time.Second),
	})
	if err != nil {
		if isTimeout(err) && ctx.Err() == nil {
			return outcome{result: Failure, output: fmt.Sprintf("command %q timed out", e.Command)}, nil
		}
		return outcome{result: Unknown}, fmt.Errorf("exec probe: %w", err)
	}
	out := limit(string(resp.Stdout) + string(resp.Stderr))
	if resp.ExitCode != 0 {
		if out == "" {
			out = fmt.Sprintf("command %q exited with %d", e.Command, resp.ExitCode)
		}
		return outcome{result: Failure, output: out}, nil
	}
	return outcome{result: Success, output: out}, nil
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.DeadlineExceeded {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// buildHTTPRequest is the pure part of the http handler.
func buildHTTPRequest(ctx context.Context, h *v1.HTTPGetAction, c *v1.Container, podIP string) (*http.Request, error) {
	port, err := resolvePort(h.Port, c)
	if err != nil {
		return nil, err
	}
	host := h.Host
	if host == "" {
		host = podIP
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("invalid probe path %q: %w", h.Path, err)
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", UserAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	return req, nil
}

// sameHostRedirects follows redirects only while the hostname is unchanged.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) > 0 && req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

func httpProbe(ctx context.Context, h *v1.HTTPGetAction, c *v1.Container, podIP string, timeout time.Duration) (outcome, error) {
	req, err := buildHTTPRequest(ctx, h, c, podIP)
	if err != nil {
		return outcome{result: Unknown}, fmt.Errorf("http probe: %w", err)
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify certs, as upstream
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		CheckRedirect: sameHostRedirects,
	}
	resp, err := client.Do(req)
	if err != nil {
		return outcome{result: Failure, output: err.Error()}, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	return classifyHTTP(resp.StatusCode, string(body)), nil
}

// classifyHTTP maps a final status code to an outcome. 3xx is only seen when
// a redirect to another host was not followed: success with a warning.
func classifyHTTP(code int, body string) outcome {
	switch {
	case code >= 200 && code < 300:
		return outcome{result: Success, output: body}
	case code >= 300 && code < 400:
		return outcome{result: Success, warning: true, output: fmt.Sprintf("Probe terminated redirects, Response body: %s", body)}
	default:
		return outcome{result: Failure, output: fmt.Sprintf("HTTP probe failed with statuscode: %d", code)}
	}
}

func tcpProbe(ctx context.Context, t *v1.TCPSocketAction, c *v1.Container, podIP string, timeout time.Duration) (outcome, error) {
	port, err := resolvePort(t.Port, c)
	if err != nil {
		return outcome{result: Unknown}, fmt.Errorf("tcp probe: %w", err)
	}
	host := t.Host
	if host == "" {
		host = podIP
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return outcome{result: Failure, output: err.Error()}, nil
	}
	_ = conn.Close()
	return outcome{result: Success}, nil
}

func grpcProbe(ctx context.Context, g *v1.GRPCAction, podIP string, timeout time.Duration) (outcome, error) {
	if g.Port <= 0 || g.Port > 65535 {
		return outcome{result: Unknown}, fmt.Errorf("grpc probe: invalid port %d", g.Port)
	}
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(UserAgent))
	if err != nil {
		return outcome{result: Failure, output: fmt.Sprintf("error: failed to connect to %s: %v", addr, err)}, nil
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	svc := ""
	if g.Service != nil {
		svc = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{Service: svc})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return outcome{result: Failure, output: "this server does not implement the grpc health protocol (grpc.health.v1.Health)"}, nil
		case codes.DeadlineExceeded:
			return outcome{result: Failure, output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}, nil
		default:
			return outcome{result: Failure, output: fmt.Sprintf("error: health rpc probe failed: %v", err)}, nil
		}
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcome{result: Failure, output: fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}, nil
	}
	return outcome{result: Success}, nil
}

// probeCommand is the exec probe's command with $(VAR) expanded from the
// container's literal env values, as upstream does.
func probeCommand(cmd []string, c *v1.Container) []string {
	if c == nil {
		return cmd
	}
	return podutil.ExpandCommandOnlyStatic(cmd, c.Env)
}
