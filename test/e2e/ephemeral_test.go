//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// session is a command whose stdin the test writes while it runs and
// whose output it watches.
type session struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
}

func (s *session) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

func (s *session) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// startSession starts name with args, stdout and stderr captured.
func startSession(t *testing.T, ctx context.Context, name string, args ...string) *session {
	t.Helper()
	s := &session{cmd: exec.CommandContext(ctx, name, args...)}
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = s, s
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// run types line, waits until the output shows want, then types exit
// and waits for the command to end. Stdin stays open until then: on
// stdin EOF containerd ends an attach session of a container without
// stdinOnce at once, output still in flight.
func (s *session) run(t *testing.T, line, want string) string {
	t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, fmt.Sprintf("%q in the session's output", want), func() (bool, error) {
		return strings.Contains(s.output(), want), fmt.Errorf("output so far: %q", s.output())
	})
	io.WriteString(s.stdin, "exit\n")
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("%v: %v\n%s", s.cmd.Args, err, s.output())
	}
	return s.output()
}

func ephemeralStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == name {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

// kubectl debug against our kubelet, as a user types it: the debug
// container is added through pods/ephemeralcontainers, starts without
// the pod restarting, shares the target container's process namespace
// (it sees the target's "sleep 3601"), and attach (-i, and -it through a
// pseudo-terminal), exec and logs work on it; its status is reported in
// ephemeralContainerStatuses; kubelet_managed_ephemeral_containers counts it.
func TestKubectlDebugEphemeralContainer(t *testing.T) {
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	target := podOn(n.NodeName, "target", "sleep", "3601")
	target.Spec.Containers[0].Name = "app"
	created := time.Now()
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitPod(t, n.client, ns, "target", "running", podRunning)
	regular := time.Since(created)
	appID := before.Status.ContainerStatuses[0].ContainerID

	debug := []string{"-n", ns, "debug", "target", "--image=" + busybox, "--image-pull-policy=IfNotPresent", "--target=app"}

	kubectlPath := filepath.Join(framework.BinDir(), "kubectl")
	kc := append([]string{"--kubeconfig", framework.AdminKubeconfig()}, debug...)

	// kubectl debug -i: attach through stdin; the debug container sees the
	// target's processes.
	startSession(t, ctx, kubectlPath, append(kc, "-i", "-c", "debugger", "--", "sh")...).run(t, "ps", "sleep 3601")
	p := waitPod(t, n.client, ns, "target", "debugger terminated", func(p *v1.Pod) bool {
		s := ephemeralStatus(p, "debugger")
		return s != nil && s.State.Terminated != nil
	})
	if s := ephemeralStatus(p, "debugger"); s.State.Terminated.ExitCode != 0 || s.ContainerID == "" || s.Ready || s.Started != nil {
		t.Errorf("debugger status %+v", s)
	}
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != appID || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("the target container was disturbed: %+v", cs)
	}
	if out := kubectl(t, "-n", ns, "logs", "target", "-c", "debugger"); !strings.Contains(out, "sleep 3601") {
		t.Errorf("kubectl logs of the debug container: %q", out)
	}

	// kubectl debug -it, through a pseudo-terminal as a user's shell has.
	// In the target container's process namespace PID 1 is its sleep (in
	// the pod's, or its own, it would be pause or sh).
	script := strings.Join(append([]string{kubectlPath}, append(kc, "-it", "-c", "interactive", "--", "sh")...), " ")
	tty := startSession(t, ctx, "script", "-qfec", script, "/dev/null")
	tty.run(t, `echo pid-one-is-$(tr '\0' ' ' < /proc/1/cmdline)`, "pid-one-is-sleep 3601")

	// Without -i: created and left running; exec into it.
	patched := time.Now()
	kubectl(t, append(debug, "-c", "sleeper", "--", "sleep", "3600")...)
	waitPod(t, n.client, ns, "target", "sleeper running", func(p *v1.Pod) bool {
		s := ephemeralStatus(p, "sleeper")
		return s != nil && s.State.Running != nil
	})
	ephemeral := time.Since(patched)
	t.Logf("time to running: pod %v, ephemeral container %v", regular.Round(time.Millisecond), ephemeral.Round(time.Millisecond))
	if out := kubectl(t, "-n", ns, "exec", "target", "-c", "sleeper", "--", "ps"); !strings.Contains(out, "sleep 3601") {
		t.Errorf("kubectl exec in the debug container: %q", out)
	}
	// The read-only port serves /metrics (the API server will not proxy to
	// a loopback node address).
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", n.ReadOnlyPort))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), "kubelet_managed_ephemeral_containers 3") {
		t.Errorf("metrics lack kubelet_managed_ephemeral_containers 3")
	}
	p, err = n.client.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != appID || cs.RestartCount != 0 {
		t.Errorf("the target container restarted: %+v", cs)
	}
}

// BenchmarkContainerStart compares what a user waits for: a pod created →
// Running (sandbox and container), and an ephemeral container added
// through pods/ephemeralcontainers → running in ephemeralContainerStatuses,
// both through the real API server and containerd, timed to the watch
// event. The bar: an ephemeral container starts as fast as a regular one.
func BenchmarkContainerStart(b *testing.B) {
	n := joinNode(b, "podLogsDir: "+b.TempDir())
	n.Start()
	ns := namespace(b, n.client)
	ctx := context.Background()
	// mean is each sub-benchmark's time per op in its last (largest) run.
	mean := map[string]time.Duration{}
	b.Run("pod", func(b *testing.B) {
		start := time.Now()
		defer func() { mean["pod"] = time.Since(start) / time.Duration(b.N) }()
		for i := 0; i < b.N; i++ {
			name := fmt.Sprintf("regular-%d-%d", b.N, i)
			if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podOn(n.NodeName, name, "sleep", "3600"), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			waitPodB(b, n.client, ns, name, podRunning)
		}
	})
	target := podOn(n.NodeName, "target", "sleep", "3600")
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitPodB(b, n.client, ns, "target", podRunning)
	b.Run("ephemeral", func(b *testing.B) {
		start := time.Now()
		defer func() { mean["ephemeral"] = time.Since(start) / time.Duration(b.N) }()
		for i := 0; i < b.N; i++ {
			name := fmt.Sprintf("debug-%d-%d", b.N, i)
			p, err := n.client.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: busybox,
					ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sleep", "3600"}}})
			if _, err := n.client.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, "target", p, metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			waitPodB(b, n.client, ns, "target", func(p *v1.Pod) bool {
				s := ephemeralStatus(p, name)
				return s != nil && s.State.Running != nil
			})
		}
	})
	if mean["ephemeral"] > mean["pod"] {
		b.Errorf("an ephemeral container took %v to start, a pod %v: slower than a regular one", mean["ephemeral"], mean["pod"])
	}
}
