package allocation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/admission"
)

// cluster is a node with 2 CPUs and 4Gi and the pods on it, behind a
// Manager whose admission is the kubelet's own (admission.Admit).
type cluster struct {
	t    *testing.T
	m    *Manager
	clk  *testingclock.FakeClock
	rec  *record.FakeRecorder
	met  *metrics.Metrics
	mu   sync.Mutex
	pods map[types.UID]*v1.Pod
	sync []types.UID
	swap map[string]bool // containers with swap
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, clk: testingclock.NewFakeClock(time.Unix(1000, 0)), rec: record.NewFakeRecorder(100),
		met: metrics.New(), pods: map[types.UID]*v1.Pod{}, swap: map[string]bool{}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}}}
	c.m = New(Config{
		Records: NewRecords(NewMemoryState(), c.clk, c.met), Clock: c.clk, Recorder: c.rec,
		Admit: func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
			r := admission.Admit(pod, node, others)
			return r.Admit, r.Reason, r.Message
		},
		Active: func() []*v1.Pod {
			c.mu.Lock()
			defer c.mu.Unlock()
			var out []*v1.Pod
			for _, p := range c.pods {
				out = append(out, p)
			}
			return out
		},
		Pod: func(uid types.UID) (*v1.Pod, bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			p, ok := c.pods[uid]
			return p, ok
		},
		Sync: func(uid types.UID) {
			c.mu.Lock()
			c.sync = append(c.sync, uid)
			c.mu.Unlock()
		},
		LimitedSwap: func(_ *v1.Pod, ct *v1.Container) bool { return c.swap[ct.Name] },
	})
	return c
}

func pod(uid, cpu, mem string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Generation: 1}}
	p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox", Resources: reqs(cpu, mem, cpu, mem)}}
	return p
}

// add admits p like the sync loop does for a new pod.
func (c *cluster) add(p *v1.Pod) {
	c.t.Helper()
	if ok, reason, msg := c.m.AddPod(p, c.m.cfg.Active()); !ok {
		c.t.Fatalf("pod %s not admitted: %s %s", p.Name, reason, msg)
	}
	c.mu.Lock()
	c.pods[p.UID] = p
	c.mu.Unlock()
}

// resize is a pods/resize patch arriving as a source UPDATE.
func (c *cluster) resize(uid types.UID, cpu, mem string) *v1.Pod {
	c.mu.Lock()
	old := c.pods[uid]
	p := old.DeepCopy()
	p.Generation++
	p.Spec.Containers[0].Resources = reqs(cpu, mem, cpu, mem)
	c.pods[uid] = p
	c.mu.Unlock()
	c.m.HandleUpdate(old, p)
	return p
}

func (c *cluster) synced() []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sync
	c.sync = nil
	return out
}

func (c *cluster) events() []string {
	var out []string
	for {
		select {
		case e := <-c.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (c *cluster) allocatedCPU(uid types.UID) string {
	r, _ := c.m.allocated.Container(uid, "c")
	return r.Requests.Cpu().String()
}

func condition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// A resize that fits is allocated at once: the checkpointed allocation
// moves, PodResizeInProgress is set with the resize's generation, a
// ResizeStarted event carries upstream's message, and the pod is synced.
func TestResizeThatFitsIsAllocated(t *testing.T) {
	c := newCluster(t)
	c.add(pod("a", "500m", "1Gi"))
	c.resize("a", "1", "1Gi")
	if got := c.allocatedCPU("a"); got != "1" {
		t.Fatalf("allocated cpu %s, want 1", got)
	}
	conds := c.m.Conditions("a")
	ip := condition(conds, v1.PodResizeInProgress)
	if ip == nil || ip.Reason != "" || ip.ObservedGeneration != 2 || condition(conds, v1.PodResizePending) != nil {
		t.Fatalf("conditions %+v, want InProgress for generation 2 and no Pending", conds)
	}
	want := `Normal ResizeStarted Pod resize started: {"containers":[{"name":"c","resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"1","memory":"1Gi"}}}],"generation":2}`
	if evs := c.events(); len(evs) != 1 || evs[0] != want {
		t.Fatalf("events %q, want %q", evs, want)
	}
	if s := c.synced(); len(s) != 1 || s[0] != "a" {
		t.Fatalf("synced %v, want a", s)
	}
	if v := testutil.ToFloat64(c.met.ContainerRequestedResizes.WithLabelValues("cpu", "requests", "increase")); v != 1 {
		t.Fatalf("container_requested_resizes_total cpu requests increase = %v", v)
	}
	// The pod runs with its allocation: a later pod sees 1 CPU taken.
	allocated, differs := c.m.Apply(c.pods["a"])
	if differs || allocated.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
		t.Fatalf("Apply: %v differs %v", allocated.Spec.Containers[0].Resources, differs)
	}
}

// A resize the node cannot give now is Deferred with the admission's
// reason in the event and its message in the condition; the pod keeps its
// old allocation; once another pod goes it is allocated, counted as a
// deferred resize accepted after pods_removed.
func TestResizeThatDoesNotFitIsDeferredThenAllocated(t *testing.T) {
	c := newCluster(t)
	c.add(pod("a", "500m", "1Gi"))
	c.add(pod("b", "1", "1Gi"))
	c.resize("a", "1500m", "1Gi")
	if got := c.allocatedCPU("a"); got != "500m" {
		t.Fatalf("allocated cpu %s, want still 500m", got)
	}
	p := condition(c.m.Conditions("a"), v1.PodResizePending)
	wantMsg := "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"
	if p == nil || p.Reason != v1.PodReasonDeferred || p.Message != wantMsg || p.ObservedGeneration != 2 {
		t.Fatalf("PodResizePending %+v, want Deferred %q", p, wantMsg)
	}
	evs := c.events()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning ResizeDeferred Pod resize OutOfcpu: ") || !strings.Contains(evs[0], `"error":"`+wantMsg+`"`) {
		t.Fatalf("events %q", evs)
	}
	if v := testutil.ToFloat64(c.met.PodPendingResizes.WithLabelValues("deferred")); v != 1 {
		t.Fatalf("pod_pending_resizes{deferred} = %v", v)
	}
	c.synced()
	// Still deferred on a retry: no new event.
	c.m.RetryPending(triggerPeriodic)
	if evs := c.events(); len(evs) != 0 {
		t.Fatalf("a retry with nothing changed emitted %q", evs)
	}

	c.mu.Lock()
	delete(c.pods, "b")
	c.mu.Unlock()
	c.m.RemovePod("b")
	if got := c.allocatedCPU("a"); got != "1500m" {
		t.Fatalf("after b left: allocated cpu %s, want 1500m", got)
	}
	if condition(c.m.Conditions("a"), v1.PodResizePending) != nil {
		t.Fatalf("PodResizePending still set: %+v", c.m.Conditions("a"))
	}
	if v := testutil.ToFloat64(c.met.PodDeferredAcceptedResizes.WithLabelValues(TriggerPodsRemoved)); v != 1 {
		t.Fatalf("pod_deferred_accepted_resizes_total{pods_removed} = %v", v)
	}
	if c.m.HasPending() {
		t.Fatal("the resize is still pending")
	}
}

// More than the node has at all is still Deferred in v1.36 (the node may
// grow), with the admission's message; a memory resize of a container with
// swap is Infeasible (upstream's only infeasible resize on a node without
// static CPU or memory managers), and is not retried.
func TestResizePendingReasons(t *testing.T) {
	c := newCluster(t)
	c.add(pod("a", "500m", "1Gi"))
	c.resize("a", "3", "1Gi")
	if p := condition(c.m.Conditions("a"), v1.PodResizePending); p == nil || p.Reason != v1.PodReasonDeferred ||
		p.Message != "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000" {
		t.Fatalf("beyond capacity: %+v", p)
	}
	c.events()

	c.swap["c"] = true
	c.resize("a", "3", "2Gi")
	p := condition(c.m.Conditions("a"), v1.PodResizePending)
	if p == nil || p.Reason != v1.PodReasonInfeasible || p.Message != InfeasibleSwap || p.ObservedGeneration != 3 {
		t.Fatalf("swap: %+v", p)
	}
	if evs := c.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning ResizeInfeasible Pod resize Infeasible: ") {
		t.Fatalf("events %q", evs)
	}
	if c.m.HasPending() {
		t.Fatal("an infeasible resize must not be retried")
	}
	if v := testutil.ToFloat64(c.met.PodInfeasibleResizes.WithLabelValues("swap_limitation")); v != 1 {
		t.Fatalf("pod_infeasible_resizes_total = %v", v)
	}

	// Reverted to what was allocated: the condition goes.
	c.resize("a", "500m", "1Gi")
	if conds := c.m.Conditions("a"); len(conds) != 0 {
		t.Fatalf("after the revert: %+v", conds)
	}
}

// A pod resized while the kubelet was down is admitted with what it had
// (the checkpoint) and then resized; its conditions come back from its
// API status.
func TestRestartKeepsAllocation(t *testing.T) {
	c := newCluster(t)
	c.add(pod("a", "500m", "1Gi"))
	state := c.m.allocated
	c2 := newCluster(t)
	c2.m.allocated = state
	resized := pod("a", "700m", "1Gi")
	resized.Generation = 2
	resized.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: 1}}
	c2.mu.Lock()
	c2.pods["a"] = resized
	c2.mu.Unlock()
	if ok, _, _ := c2.m.AddPod(resized, nil); !ok {
		t.Fatal("not admitted")
	}
	if got := c2.allocatedCPU("a"); got != "700m" {
		t.Fatalf("allocated %s, want the pending resize allocated (700m)", got)
	}
	if ip := condition(c2.m.Conditions("a"), v1.PodResizeInProgress); ip == nil || ip.ObservedGeneration != 2 {
		t.Fatalf("InProgress %+v, want the new resize's (generation 2)", ip)
	}

	// A pod whose resize was allocated but not yet actuated keeps its
	// condition across the restart.
	c3 := newCluster(t)
	c3.m.allocated = state
	if ok, _, _ := c3.m.AddPod(resized, nil); !ok {
		t.Fatal("not admitted")
	}
	if ip := condition(c3.m.Conditions("a"), v1.PodResizeInProgress); ip == nil || ip.ObservedGeneration != 1 {
		t.Fatalf("InProgress %+v, want the backfilled one (generation 1)", ip)
	}
}

// Pending resizes are tried in upstream's order: those not asking for more
// first, then higher priority, then Guaranteed, then the oldest.
func TestPendingOrder(t *testing.T) {
	c := newCluster(t)
	mk := func(uid string, prio int32, cpu string) {
		p := pod(uid, "100m", "100Mi")
		p.Spec.Priority = &prio
		c.add(p)
		np := p.DeepCopy()
		np.Spec.Containers[0].Resources = reqs(cpu, "100Mi", cpu, "100Mi")
		c.mu.Lock()
		c.pods[p.UID] = np
		c.mu.Unlock()
		c.m.push(p.UID)
	}
	mk("low", 1, "200m")
	mk("high", 10, "200m")
	mk("shrink", 0, "50m")
	c.m.mu.Lock()
	var got []string
	for _, p := range c.m.pendingPodsLocked() {
		got = append(got, p.Name)
	}
	c.m.mu.Unlock()
	if fmt.Sprint(got) != "[shrink high low]" {
		t.Fatalf("order %v", got)
	}
}

// The periodic retry runs 30 s after start, then every 3 minutes.
func TestPeriodicRetry(t *testing.T) {
	c := newCluster(t)
	c.add(pod("a", "500m", "1Gi"))
	c.add(pod("b", "1", "1Gi"))
	c.resize("a", "1500m", "1Gi")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { c.m.Run(ctx); close(done) }()
	// Free the CPU without telling the manager: only the periodic retry sees it.
	c.mu.Lock()
	delete(c.pods, "b")
	c.mu.Unlock()
	for i := 0; i < 100 && c.allocatedCPU("a") != "1500m"; i++ {
		c.clk.Step(retryDelay)
		time.Sleep(time.Millisecond)
	}
	if got := c.allocatedCPU("a"); got != "1500m" {
		t.Fatalf("the periodic retry never allocated the resize: %s", got)
	}
	cancel()
	<-done
}
