//go:build reliability

package reliability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// runtimeDown is how long containerd stays dead: systemd's RestartSec in
// containerd.service.
const runtimeDown = 5 * time.Second

// TestContainerdRestart kills the (private) containerd with SIGKILL while the
// kubelet runs pods, starts it again after runtimeDown, and measures how
// long after its return every pod is Ready in the API again (and the
// node): no container may change or restart.
func TestContainerdRestart(t *testing.T) {
	privateRuntime(t)
	cp := controlPlane(t)
	ns := cp.Namespace(t, ifw.UniqueName("rel-containerd"))
	n := startNode(t, cp)
	pods := scale(10, 30)
	var specs []*v1.Pod
	for i := 0; i < pods; i++ {
		p := sleeper(n.NodeName, fmt.Sprintf("p%02d", i))
		if i%2 == 1 {
			withReadinessProbe(p)
		}
		specs = append(specs, p)
	}
	createPods(t, n.client, ns, specs)
	before := waitPods(t, n.client, ns, pods, 5*time.Minute, "Running and Ready", podReady)
	list, err := n.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := watchReady(t, n.client, ns, list.ResourceVersion)
	nw := watchNode(t, n.client, n.NodeName)

	killContainerd(t)
	time.Sleep(runtimeDown)
	back := startContainerd(t)
	var converged time.Duration
	ifw.Eventually(t, 3*time.Minute, 100*time.Millisecond, "every pod and the node Ready again", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !nodeReady(nd) {
			return false, fmt.Errorf("node not Ready: %v", nd.Status.Conditions)
		}
		list, err := n.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var notReady []string
		for i := range list.Items {
			if !podReady(&list.Items[i]) {
				notReady = append(notReady, list.Items[i].Name)
			}
		}
		if len(notReady) > 0 {
			return false, fmt.Errorf("not Ready: %v", notReady)
		}
		converged = time.Since(back)
		return true, nil
	})
	// Leave the kubelet one status resync to undo anything.
	time.Sleep(statusResync)
	events, notReady, first := w.result()
	after := waitPods(t, n.client, ns, pods, time.Minute, "Ready", podReady)
	restarts, changed := compareContainers(containersOf(before), containersOf(after))
	figure(t, "pods", float64(pods), "", "")
	figure(t, "runtime_down", seconds(runtimeDown), "s", "")
	figure(t, "all_ready_after_runtime_back", seconds(converged), "s", "<= 10")
	figure(t, "watch_events", float64(events), "", "")
	if len(notReady) > 0 {
		t.Logf("pods shown not Ready: %s; first: %s", strings.Join(notReady, " "), first)
	}
	figure(t, "pods_ever_not_ready", float64(len(notReady)), "", "")
	figure(t, "node_not_ready_events", float64(nw.result()), "", "")
	figure(t, "container_restarts", float64(restarts), "", "== 0")
	figure(t, "container_ids_changed", float64(changed), "", "== 0")
}

// containerdPidfile is where hack/private-containerd.sh records its pid.
func containerdPidfile() string {
	return filepath.Join("/run/seed-kubelet", os.Getenv(envContainerd)+"-containerd.pid")
}

// killContainerd SIGKILLs the private containerd (its shims, and so the
// containers, live on) and waits until it is gone.
func killContainerd(t *testing.T) {
	t.Helper()
	privateRuntime(t)
	data, err := os.ReadFile(containerdPidfile())
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill containerd %d: %v", pid, err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// startContainerd starts the private containerd again and returns when it
// answered CRI first (the script goes on to import images).
func startContainerd(t *testing.T) time.Time {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(framework.RepoRoot(), "hack/private-containerd.sh"), os.Getenv(envContainerd))
	cmd.Dir = framework.RepoRoot()
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	var answered time.Time
	for answered.IsZero() {
		if runtimeAnswers() {
			answered = time.Now()
			break
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("restart containerd: %v\n%s", err, out)
			}
			if !runtimeAnswers() {
				t.Fatalf("containerd restarted but does not answer:\n%s", out)
			}
			return time.Now()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("restart containerd: %v\n%s", err, out)
	}
	return answered
}

// runtimeAnswers reports whether the private containerd answers CRI Version.
func runtimeAnswers() bool {
	conn, err := grpc.NewClient(ifw.RuntimeEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err == nil
}
