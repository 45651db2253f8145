//go:build reliability

package reliability

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// streamAbortAfter is how long a stream lives before its client is killed.
const streamAbortAfter = 300 * time.Millisecond

// goroutineSlack is the noise allowed around the baseline goroutine count
// (probe workers, timers and connections come and go).
const goroutineSlack = 5

// TestAbortedStreams opens exec, attach and port-forward streams through the
// apiserver (kubectl) and kills each client mid-way; once they are gone the
// kubelet's goroutines must be back to where they were.
func TestAbortedStreams(t *testing.T) {
	cp := controlPlane(t)
	ns := cp.Namespace(t, ifw.UniqueName("rel-streams"))
	n := startNode(t, cp)
	createPods(t, n.client, ns, []*v1.Pod{withReadinessProbe(sleeper(n.NodeName, "target"))})
	waitPods(t, n.client, ns, 1, 3*time.Minute, "Ready", podReady)
	kubectl := filepath.Join(framework.BinDir(), "kubectl")
	s := &streams{t: t, n: n, ns: ns, kubectl: kubectl, kubeconfig: cp.Kubeconfig}

	// Warm up every path (connection pools, caches), then take the baseline.
	for i := 0; i < 6; i++ {
		s.abort(i)
	}
	baseline := s.settled(30 * time.Second)
	count := scale(30, 200)
	start := time.Now()
	s.failed = 0
	for i := 0; i < count; i++ {
		s.abort(i)
	}
	done := time.Now()
	// The lowest count seen until it is back to the baseline (or two
	// minutes passed), as the baseline is the lowest of a quiet spell.
	after := s.goroutines()
	for after > baseline && time.Since(done) < 2*time.Minute {
		time.Sleep(500 * time.Millisecond)
		after = min(after, s.goroutines())
	}
	back := time.Since(done)
	t.Logf("%d streams in %v", count, done.Sub(start).Round(time.Millisecond))
	figure(t, "streams_aborted", float64(count), "", "")
	// A stream that never reached the kubelet tests nothing.
	figure(t, "streams_failed", float64(s.failed), "", "== 0")
	figure(t, "goroutines_baseline", float64(baseline), "", "")
	figure(t, "goroutines_after", float64(after), "", "")
	figure(t, "goroutines_over_baseline", float64(after-baseline), "", fmt.Sprintf("<= %d", goroutineSlack))
	figure(t, "goroutines_settled_after", seconds(back), "s", "")
}

type streams struct {
	t       *testing.T
	n       *node
	ns      string
	kubectl string
	// kubeconfig is the control plane's admin kubeconfig.
	kubeconfig string
	// failed counts the streams that never reached the container.
	failed int
}

// goroutines is the kubelet's go_goroutines.
func (s *streams) goroutines() int {
	s.t.Helper()
	fams, err := s.n.scrape("/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	if fams["go_goroutines"] == nil {
		s.t.Fatal("no go_goroutines in /metrics")
	}
	return int(sample(fams, "go_goroutines", nil))
}

// settled waits until the goroutine count stops falling for a few seconds
// and returns it.
func (s *streams) settled(limit time.Duration) int {
	deadline := time.Now().Add(limit)
	low, since := s.goroutines(), time.Now()
	for time.Now().Before(deadline) && time.Since(since) < 5*time.Second {
		time.Sleep(500 * time.Millisecond)
		if g := s.goroutines(); g < low {
			low, since = g, time.Now()
		}
	}
	return low
}

// abort opens stream i (exec, attach or port-forward in turn) and kills its
// client mid-way.
func (s *streams) abort(i int) {
	s.t.Helper()
	switch i % 3 {
	case 0:
		s.run("exec", "target", "--", "sleep", "30")
	case 1:
		s.run("attach", "target", "-c", "main")
	case 2:
		s.portForward()
	}
}

// run runs kubectl with args and kills it after streamAbortAfter. A
// kubectl that ends on its own before that never got its stream (the
// apiserver could not reach the kubelet, the kubelet refused it): that
// stream counts as failed.
func (s *streams) run(args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), streamAbortAfter)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.kubectl, append([]string{"--kubeconfig", s.kubeconfig, "-n", s.ns}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() == nil {
		s.fail("kubectl %s ended before it was killed (%v): %s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
}

// fail counts a stream that never reached the container and logs the
// first few.
func (s *streams) fail(format string, args ...any) {
	s.t.Helper()
	s.failed++
	if s.failed <= 3 {
		s.t.Logf(format, args...)
	}
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)

// portForward forwards a local port to the pod's 8080, sends half an HTTP
// request through it and kills kubectl with the connection open.
func (s *streams) portForward() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.kubectl, "--kubeconfig", s.kubeconfig, "-n", s.ns,
		"port-forward", "--address", "127.0.0.1", "pod/target", ":8080")
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	defer cmd.Wait()
	defer cancel()
	sc := bufio.NewScanner(out)
	port := ""
	for port == "" && sc.Scan() {
		if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
			port = m[1]
		}
	}
	if port == "" {
		cancel()
		cmd.Wait()
		s.fail("kubectl port-forward printed no local port: %s", bytes.TrimSpace(stderr.Bytes()))
		return
	}
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
	if err != nil {
		s.fail("connect to the forwarded port: %v", err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: target\r\n") // no end of headers: the request hangs
	time.Sleep(streamAbortAfter)
}
