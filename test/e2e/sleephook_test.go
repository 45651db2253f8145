//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const sleepHookFinalizer = "e2e.seed-kubelet.io/keep"

// sleepHookPod runs sleep 3600 with a preStop sleep of hookSeconds, held by
// a finalizer so that the container's final status stays readable after
// the pod is deleted, as the Lifecycle Sleep Hook conformance specs do.
func sleepHookPod(nodeName, name string, hookSeconds, grace int64) *v1.Pod {
	// sleep as PID 1 would ignore SIGTERM and wait for the grace period's end.
	p := podOn(nodeName, name, "sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	p.Finalizers = []string{sleepHookFinalizer}
	p.Spec.TerminationGracePeriodSeconds = ptr.To(grace)
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: hookSeconds}}}
	return p
}

func dropFinalizer(t *testing.T, n *node, ns, name string) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	if _, err := n.client.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("drop finalizer of %s: %v", name, err)
	}
}

func terminatedMain(p *v1.Pod) bool {
	return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
}

// The "Lifecycle Sleep Hook" conformance specs against our kubelet: a
// deleted pod's container runs its preStop sleep, then is killed and
// reported terminated (not waiting for a restart); a second delete with a
// shorter grace period cuts a long preStop sleep short.
func TestPreStopSleepHookAndShorterGracePeriod(t *testing.T) {
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	pods := n.client.CoreV1().Pods(ns)

	// preStop sleep 5 s within a 30 s grace period.
	if _, err := pods.Create(ctx, sleepHookPod(n.NodeName, "sleep-5", 5, 30), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer dropFinalizer(t, n, ns, "sleep-5")
	waitPod(t, n.client, ns, "sleep-5", "running", podRunning)
	deleted := time.Now()
	if err := pods.Delete(ctx, "sleep-5", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, n.client, ns, "sleep-5", "main terminated", terminatedMain)
	took := time.Since(deleted)
	term := p.Status.ContainerStatuses[0].State.Terminated
	hookRan := term.FinishedAt.Sub(deleted)
	if hookRan < 4*time.Second || took > 25*time.Second || term.ExitCode != 0 {
		t.Errorf("container finished %v after the delete (observed after %v): want the 5 s preStop sleep, well inside the grace period; %+v", hookRan, took, term)
	}

	// preStop sleep 25 s, grace 30 s; deleting again with a grace period
	// of 2 s ends it within seconds.
	if _, err := pods.Create(ctx, sleepHookPod(n.NodeName, "sleep-long", 25, 30), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer dropFinalizer(t, n, ns, "sleep-long")
	waitPod(t, n.client, ns, "sleep-long", "running", podRunning)
	if err := pods.Delete(ctx, "sleep-long", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "sleep-long", "terminating in the kubelet", func(p *v1.Pod) bool {
		return p.DeletionTimestamp != nil
	})
	shortened := time.Now()
	if err := pods.Delete(ctx, "sleep-long", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](2)}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, n.client, ns, "sleep-long", "main terminated", terminatedMain)
	if d := p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Sub(shortened); d > 15*time.Second {
		t.Errorf("container finished %v after the grace period was cut to 2 s", d)
	}
}
