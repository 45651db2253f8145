//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// memoryAvailableMi is memory.available as the kubelet computes it: the
// machine's memory (MemTotal) less the root memory cgroup's working set
// (usage less inactive file cache).
func memoryAvailableMi(t *testing.T) int64 {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	field := func(text, key string) int64 {
		for _, l := range strings.Split(text, "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && strings.TrimSuffix(f[0], ":") == key {
				v, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatalf("no %s", key)
		return 0
	}
	total := field(read("/proc/meminfo"), "MemTotal") * 1024
	usage, err := strconv.ParseInt(strings.TrimSpace(read("/sys/fs/cgroup/memory/memory.usage_in_bytes")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	inactive := field(read("/sys/fs/cgroup/memory/memory.stat"), "total_inactive_file")
	return (total - (usage - inactive)) >> 20
}

func hasCondition(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func evicted(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
}

// TestMemoryPressureEviction sets memory.available's hard threshold
// hogMi/2 below what the node has now, then runs an idle BestEffort pod
// and a Burstable pod that takes hogMi within its request. The BestEffort
// pod is evicted first (it exceeds its zero request), new BestEffort pods
// are rejected while MemoryPressure lasts, then the hog goes, and
// MemoryPressure clears after evictionPressureTransitionPeriod.
func TestMemoryPressureEviction(t *testing.T) {
	const hogMi, transition = 1500, 15 * time.Second
	avail := memoryAvailableMi(t)
	threshold := avail - hogMi/2
	t.Logf("memory.available now %dMi; hard threshold %dMi; hog %dMi", avail, threshold, hogMi)
	n := joinNode(t, "nodeStatusUpdateFrequency: 2s", "kernelMemcgNotification: true",
		fmt.Sprintf("evictionHard:\n  memory.available: %dMi", threshold),
		fmt.Sprintf("evictionPressureTransitionPeriod: %s", transition))
	n.Start()
	c := n.client
	ctx := ctxT(t)
	eventually(t, 30*time.Second, "node Ready", func() (bool, error) {
		nd, err := c.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(nd), err
	})

	// Watch the node's MemoryPressure condition throughout.
	var mu sync.Mutex
	var pressureSeen []v1.ConditionStatus
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			if nd, err := c.CoreV1().Nodes().Get(watchCtx, n.NodeName, metav1.GetOptions{}); err == nil {
				for _, cond := range nd.Status.Conditions {
					if cond.Type == v1.NodeMemoryPressure {
						mu.Lock()
						if len(pressureSeen) == 0 || pressureSeen[len(pressureSeen)-1] != cond.Status {
							pressureSeen = append(pressureSeen, cond.Status)
						}
						mu.Unlock()
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()

	ns := namespace(t, c)
	idle := podOn(n.NodeName, "idle")
	if _, err := c.CoreV1().Pods(ns).Create(ctx, idle, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, ns, "idle", "running", podRunning)
	hog := podOn(n.NodeName, "hog", "sh", "-c", fmt.Sprintf("dd if=/dev/zero bs=%dM count=1 | sleep 3600", hogMi))
	hog.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", hogMi+200))}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	var got *v1.Pod
	eventually(t, 90*time.Second, "the BestEffort pod evicted", func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "idle", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		if !evicted(p) {
			return false, fmt.Errorf("idle: phase %s reason %q", p.Status.Phase, p.Status.Reason)
		}
		return true, nil
	})
	t.Logf("idle evicted %v after the hog was created: %s", time.Since(start).Round(time.Millisecond), got.Status.Message)
	if !strings.HasPrefix(got.Status.Message, "The node was low on resource: memory. Threshold quantity: "+strconv.FormatInt(threshold, 10)+"Mi, available: ") ||
		!strings.Contains(got.Status.Message, "Container main was using ") {
		t.Errorf("eviction message %q", got.Status.Message)
	}
	if !hasCondition(got, v1.DisruptionTarget) {
		t.Errorf("evicted pod conditions %+v, want DisruptionTarget", got.Status.Conditions)
	}
	if h, err := c.CoreV1().Pods(ns).Get(ctx, "hog", metav1.GetOptions{}); err != nil || evicted(h) {
		t.Errorf("hog evicted before or with the BestEffort pod (err %v)", err)
	}

	// Under MemoryPressure a new BestEffort pod is rejected.
	late := podOn(n.NodeName, "late")
	if _, err := c.CoreV1().Pods(ns).Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rejected := waitPod(t, c, ns, "late", "rejected under memory pressure", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if rejected.Status.Reason != "Evicted" || rejected.Status.Message != "The node had condition: [MemoryPressure]. " {
		t.Errorf("late pod: reason %q message %q", rejected.Status.Reason, rejected.Status.Message)
	}

	hogPod := waitPod(t, c, ns, "hog", "evicted after the BestEffort pod", evicted)
	evictedAt := time.Now()
	// The hog stayed within its request, so no container is blamed.
	if !strings.HasPrefix(hogPod.Status.Message, "The node was low on resource: memory. ") || strings.Contains(hogPod.Status.Message, "Container main") {
		t.Errorf("hog message %q", hogPod.Status.Message)
	}

	eventually(t, transition+60*time.Second, "MemoryPressure True then False on the Node", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		s := fmt.Sprint(pressureSeen)
		return strings.Contains(s, "True False"), fmt.Errorf("MemoryPressure seen %s", s)
	})
	if d := time.Since(evictedAt); d < transition-3*time.Second {
		t.Errorf("MemoryPressure cleared %v after the last eviction, before the %v transition period", d, transition)
	}

	evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=idle,reason=Evicted"})
	if err != nil || len(evs.Items) == 0 {
		t.Errorf("no Evicted event for idle (err %v)", err)
	} else if evs.Items[0].Type != v1.EventTypeWarning || evs.Items[0].Annotations["starved_resource"] != "memory" {
		t.Errorf("Evicted event %+v", evs.Items[0])
	}
}
