//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// The API server goes away for a minute: pods keep running, no container
// restarts, and once it is back the statuses catch up (including a pod that
// finished during the outage), without the node registering again.
// Runs last (its file sorts last): it restarts the control plane.
func TestAPIServerOutage(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podOn(n.NodeName, "steady"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	finisher := podOn(n.NodeName, "finisher", "sh", "-c", "sleep 20")
	finisher.Spec.RestartPolicy = v1.RestartPolicyNever
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, finisher, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	steady := waitPod(t, n.client, ns, "steady", "running", podRunning)
	waitPod(t, n.client, ns, "finisher", "running", podRunning)
	before := steady.Status.ContainerStatuses[0]
	nodeBefore, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	stopAPIServer(t)
	outage := time.Now()
	for time.Since(outage) < 60*time.Second {
		// The kubelet stays healthy and the container keeps running.
		cs := ifw.PodContainers(t, string(steady.UID))
		if len(cs) != 1 || "containerd://"+cs[0].Id != before.ContainerID {
			t.Fatalf("during the outage the steady pod's containers are %v, want only %s", cs, before.ContainerID)
		}
		time.Sleep(5 * time.Second)
	}
	start := time.Now()
	out, err := exec.Command("bash", filepath.Join(framework.RepoRoot(), "hack/start-control-plane.sh")).CombinedOutput()
	if err != nil {
		t.Fatalf("restart control plane: %v\n%s", err, out)
	}
	t.Logf("control plane back after %v", time.Since(start).Round(time.Millisecond))
	client := framework.ControlPlane(t).Client

	after := waitPod(t, client, ns, "steady", "still running", podRunning).Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Fatalf("steady pod container %s restartCount %d after the outage; want %s and 0", after.ContainerID, after.RestartCount, before.ContainerID)
	}
	waitPod(t, client, ns, "finisher", "Succeeded (it finished during the outage)", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	eventually(t, 60*time.Second, "node Ready again, same Node object", func() (bool, error) {
		nd, err := client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(nd) && nd.UID == nodeBefore.UID, err
	})
}

// stopAPIServer kills the API server (it would otherwise wait for its
// watches to drain for about a minute).
func stopAPIServer(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile("/run/seed-kubelet/kube-apiserver.pid")
	if err != nil {
		t.Fatalf("read the apiserver's pidfile: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the apiserver: %v", err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
}
