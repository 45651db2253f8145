//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

func nodeReadyCondition(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// Graceful node shutdown in a cluster, with shutdownGracePeriodByPodPriority
// and a PriorityClass, on a real dbus-daemon with a logind stand-in: on
// PrepareForShutdown(true) the Node turns NotReady with upstream's message,
// the low-priority pod stops first within its 3 s and the high-priority
// one after it, both Failed in the API with reason Terminated and the
// DisruptionTarget condition, and NodeShutdown events are on the Node; on
// PrepareForShutdown(false) the Node is Ready again and the kubelet holds a
// new inhibitor lock.
func TestGracefulNodeShutdownCluster(t *testing.T) {
	bus := ifw.PrivateSystemBus(t)
	logind := ifw.NewLogind(t, bus, time.Minute, t.TempDir())
	n := joinNode(t, "nodeStatusUpdateFrequency: 10s", `shutdownGracePeriodByPodPriority:
- {priority: 0, shutdownGracePeriodSeconds: 3}
- {priority: 100000, shutdownGracePeriodSeconds: 2}`)
	n.Env = append(n.Env, "DBUS_SYSTEM_BUS_ADDRESS="+bus)
	ctx := ctxT(t)
	pcName := ifw.UniqueName("shutdown-high")
	if _, err := n.client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: pcName}, Value: 100000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.client.SchedulingV1().PriorityClasses().Delete(context.Background(), pcName, metav1.DeleteOptions{})
	})
	n.Start()
	ns := namespace(t, n.client)
	ignoreTERM := []string{"sh", "-c", "trap '' TERM; while true; do sleep 1; done"}
	low, high := podOn(n.NodeName, "low", ignoreTERM...), podOn(n.NodeName, "high", ignoreTERM...)
	low.Spec.TerminationGracePeriodSeconds, high.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30), ptr.To[int64](30)
	high.Spec.PriorityClassName = pcName
	for _, p := range []*v1.Pod{low, high} {
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, n.client, ns, "low", "running", podRunning)
	waitPod(t, n.client, ns, "high", "running", podRunning)
	eventually(t, 10*time.Second, "a delay inhibitor lock", func() (bool, error) {
		locks := logind.Locks()
		return len(locks) == 1 && locks[0].Held() && locks[0].Mode == "delay", nil
	})

	start := time.Now()
	logind.PrepareForShutdown(true)
	eventually(t, 10*time.Second, "the Node NotReady: node is shutting down", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := nodeReadyCondition(nd)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == "KubeletNotReady" && strings.Contains(c.Message, "node is shutting down"), nil
	})
	finished := map[string]time.Time{}
	for _, name := range []string{"low", "high"} {
		p := waitPod(t, n.client, ns, name, "Failed by the shutdown", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
		})
		if p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("%s: reason %q message %q", name, p.Status.Reason, p.Status.Message)
		}
		ok := false
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				ok = c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet" && c.Message == p.Status.Message
			}
		}
		if !ok {
			t.Errorf("%s: no DisruptionTarget (TerminationByKubelet) in %+v", name, p.Status.Conditions)
		}
		finished[name] = p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time
	}
	t.Logf("low stopped %v after the signal, high %v", finished["low"].Sub(start).Round(100*time.Millisecond), finished["high"].Sub(start).Round(100*time.Millisecond))
	if d := finished["high"].Sub(finished["low"]); d < time.Second || d > 4*time.Second {
		t.Errorf("high stopped %v after low, want after it, within its 2 s", d)
	}
	if d := finished["low"].Sub(start); d > 5*time.Second {
		t.Errorf("low stopped %v after the signal, beyond its 3 s", d)
	}
	eventually(t, 10*time.Second, "the lock released", func() (bool, error) { return !logind.Locks()[0].Held(), nil })
	evs, err := n.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + n.NodeName + ",reason=NodeShutdown"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 || evs.Items[0].Message != "Shutdown manager detected shutdown event" {
		t.Errorf("NodeShutdown events %+v", evs.Items)
	}

	logind.PrepareForShutdown(false)
	eventually(t, 15*time.Second, "the Node Ready again", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := nodeReadyCondition(nd)
		return c != nil && c.Status == v1.ConditionTrue, nil
	})
	if locks := logind.Locks(); len(locks) != 2 || !locks[1].Held() {
		t.Errorf("after the cancellation: locks %+v, want a new one held", locks)
	}
}
