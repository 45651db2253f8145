package eviction

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

// fakeNode is the world the manager sees: a summary built on demand from
// the current disk and memory figures, collectors that free disk, and a
// killer that removes the pod's usage. Every action is logged in order.
type fakeNode struct {
	mu        sync.Mutex
	clock     *clocktesting.FakeClock
	diskAvail int64 // bytes available on the one filesystem (of 100Gi)
	memWS     int64 // node working set (of 1Gi)
	pods      []*v1.Pod
	podWS     map[string]int64
	imageFree int64 // bytes the image GC frees
	log       []string
	events    []string
	statuses  map[string]v1.PodStatus
	graces    map[string]int64
}

func (f *fakeNode) Summary(context.Context, bool) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := nodeSummary(f.clock.Now(), 1024*mi, f.memWS)
	s.Node.Fs.AvailableBytes = u64(f.diskAvail)
	s.Node.Runtime.ImageFs.AvailableBytes = u64(f.diskAvail)
	for _, p := range f.pods {
		s.Pods = append(s.Pods, podStats(p, f.podWS[p.Name]))
	}
	return s, nil
}

func (f *fakeNode) DeleteAllUnusedContainers(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "containerGC")
	return nil
}

func (f *fakeNode) DeleteUnusedImages(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "imageGC")
	f.diskAvail += f.imageFree
	return f.imageFree, nil
}

func (f *fakeNode) EvictPod(_ context.Context, pod *v1.Pod, grace int64, st v1.PodStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "evict "+pod.Name)
	f.statuses[pod.Name] = st
	f.graces[pod.Name] = grace
	f.memWS -= f.podWS[pod.Name]
	var rest []*v1.Pod
	for _, p := range f.pods {
		if p.UID != pod.UID {
			rest = append(rest, p)
		}
	}
	f.pods = rest
	return nil
}

func (f *fakeNode) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kind := "node"
	if p, ok := obj.(*v1.Pod); ok {
		kind = "pod " + p.Name
	}
	f.events = append(f.events, fmt.Sprintf("%s %s %s: %s", kind, eventtype, reason, fmt.Sprintf(messageFmt, args...)))
}

func (f *fakeNode) active() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*v1.Pod(nil), f.pods...)
}

func newFakeNode() *fakeNode {
	return &fakeNode{
		clock:     clocktesting.NewFakeClock(time.Unix(1000, 0)),
		diskAvail: 50 << 30, memWS: 100 * mi, podWS: map[string]int64{},
		statuses: map[string]v1.PodStatus{}, graces: map[string]int64{},
	}
}

func newTestManager(t *testing.T, f *fakeNode, cfg evictionapi.ThresholdConfig, gc bool) (*Manager, *metrics.Metrics) {
	t.Helper()
	met := metrics.New()
	c := Config{
		Thresholds: mustParse(cfg), PressureTransitionPeriod: 30 * time.Second, MaxPodGracePeriodSeconds: 10,
		Summary: f, ActivePods: f.active, Killer: f, Recorder: f, Clock: f.clock, NodeRef: &v1.Node{}, Metrics: met,
	}
	if gc {
		c.ImageGC, c.ContainerGC = f, f
	}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return m, met
}

// changed reports whether the manager said its conditions changed since
// the last call.
func changed(m *Manager) bool {
	select {
	case <-m.ConditionsChanged():
		return true
	default:
		return false
	}
}

func TestManagerReclaimsImagesBeforeEvicting(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode()
	f.pods = []*v1.Pod{testPod("a", "", 0)}
	m, _ := newTestManager(t, f, evictionapi.ThresholdConfig{Hard: map[string]string{"nodefs.available": "10%"}}, true)

	// 5Gi of 100Gi available, below 10%; the image GC frees 20Gi.
	f.diskAvail, f.imageFree = 5<<30, 20<<30
	evicted, err := m.Synchronize(ctx)
	if err != nil || evicted != nil {
		t.Fatalf("evicted %v, err %v; want images collected instead", evicted, err)
	}
	if want := []string{"containerGC", "imageGC"}; !reflect.DeepEqual(f.log, want) {
		t.Errorf("actions = %v, want %v", f.log, want)
	}
	if !m.IsUnderDiskPressure() {
		t.Errorf("no DiskPressure while the threshold was met")
	}
	if len(f.events) != 1 || f.events[0] != "node Warning EvictionThresholdMet: Attempting to reclaim ephemeral-storage" {
		t.Errorf("events = %v", f.events)
	}

	// Not enough to free: collect, then evict one pod.
	f.log = nil
	f.clock.Step(10 * time.Second)
	f.diskAvail, f.imageFree = 5<<30, 1<<30
	evicted, err = m.Synchronize(ctx)
	if err != nil || len(evicted) != 1 || evicted[0].Name != "a" {
		t.Fatalf("evicted %v, err %v", evicted, err)
	}
	if want := []string{"containerGC", "imageGC", "evict a"}; !reflect.DeepEqual(f.log, want) {
		t.Errorf("actions = %v, want %v", f.log, want)
	}
}

func TestManagerWithoutCollectorsEvicts(t *testing.T) {
	f := newFakeNode()
	f.pods = []*v1.Pod{testPod("a", "", 0)}
	m, _ := newTestManager(t, f, evictionapi.ThresholdConfig{Hard: map[string]string{"imagefs.available": "15%"}}, false)
	f.diskAvail = 1 << 30
	evicted, err := m.Synchronize(context.Background())
	if err != nil || len(evicted) == 0 {
		t.Fatalf("evicted %v, err %v", evicted, err)
	}
	if want := []string{"evict a"}; !reflect.DeepEqual(f.log, want) {
		t.Errorf("actions = %v, want %v", f.log, want)
	}
}

func TestManagerMemoryPressure(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode()
	static := testPod("static", "", 0)
	static.Annotations["kubernetes.io/config.source"] = "file"
	within := testPod("within", "900Mi", 0)
	be := testPod("be", "", 0)
	f.pods = []*v1.Pod{static, within, be}
	f.podWS = map[string]int64{"static": 500 * mi, "within": 600 * mi, "be": 20 * mi}
	m, met := newTestManager(t, f, evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}, true)

	f.memWS = 300 * mi
	if ev, _ := m.Synchronize(ctx); ev != nil || m.IsUnderMemoryPressure() {
		t.Fatalf("no pressure yet: evicted %v", ev)
	}
	// 980Mi in use of 1Gi: the BestEffort pod goes first (it exceeds its
	// request; the static pod is critical; "within" is within its request).
	f.memWS = 980 * mi
	f.clock.Step(10 * time.Second)
	ev, err := m.Synchronize(ctx)
	if err != nil || len(ev) != 1 || ev[0].Name != "be" {
		t.Fatalf("evicted %v, err %v; want be", ev, err)
	}
	st := f.statuses["be"]
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || !strings.HasPrefix(st.Message, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 44Mi. Container c was using 20Mi, request is 0") {
		t.Errorf("status = %+v", st)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.DisruptionTarget || st.Conditions[0].Reason != v1.PodReasonTerminationByKubelet {
		t.Errorf("conditions = %+v", st.Conditions)
	}
	if f.graces["be"] != 1 {
		t.Errorf("grace period %d, want 1 for a hard threshold", f.graces["be"])
	}
	if !m.IsUnderMemoryPressure() || !changed(m) {
		t.Errorf("pressure %v, but no change of the conditions told", m.IsUnderMemoryPressure())
	}
	if ok, reason, _ := m.Admit(testPod("new-be", "", 0)); ok || reason != "Evicted" {
		t.Errorf("BestEffort pod admitted under memory pressure")
	}
	if ok, _, _ := m.Admit(testPod("new-burstable", "1Mi", 0)); !ok {
		t.Errorf("Burstable pod rejected under memory pressure")
	}
	// Still under pressure: next the Burstable one; the static pod never.
	f.clock.Step(10 * time.Second)
	if ev, _ := m.Synchronize(ctx); len(ev) != 1 || ev[0].Name != "within" {
		t.Fatalf("second eviction = %v, want within", ev)
	}
	f.memWS = 1000 * mi
	f.clock.Step(10 * time.Second)
	if ev, _ := m.Synchronize(ctx); ev != nil {
		t.Fatalf("evicted the critical pod %v", ev)
	}
	// Relief: the condition stays for the transition period, then goes.
	f.memWS = 200 * mi
	f.clock.Step(10 * time.Second)
	m.Synchronize(ctx)
	if !m.IsUnderMemoryPressure() || changed(m) {
		t.Errorf("pressure gone (or conditions changed) before the transition period")
	}
	f.clock.Step(21 * time.Second)
	m.Synchronize(ctx)
	if m.IsUnderMemoryPressure() || !changed(m) || len(m.Conditions()) != 0 {
		t.Errorf("pressure %v after the transition period, conditions %v", m.IsUnderMemoryPressure(), m.Conditions())
	}
	if got := testutil.ToFloat64(met.Evictions.WithLabelValues("memory.available")); got != 2 {
		t.Errorf("kubelet_evictions{eviction_signal=memory.available} = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(met.EvictionStatsAge); n != 1 {
		t.Errorf("kubelet_eviction_stats_age_seconds has %d series, want 1", n)
	}
	var evictedEvents int
	for _, e := range f.events {
		if strings.HasPrefix(e, "pod ") && strings.Contains(e, "Warning Evicted: The node was low on resource: memory.") {
			evictedEvents++
		}
	}
	if evictedEvents != 2 {
		t.Errorf("events = %v, want one Evicted event per evicted pod", f.events)
	}
}

func TestManagerSoftThresholdGracePeriods(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode()
	p := testPod("p", "", 0)
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	f.pods = []*v1.Pod{p}
	m, _ := newTestManager(t, f, evictionapi.ThresholdConfig{
		Soft: map[string]string{"memory.available": "300Mi"}, SoftGracePeriod: map[string]string{"memory.available": "1m"},
	}, false)
	f.memWS = 800 * mi
	if ev, _ := m.Synchronize(ctx); ev != nil {
		t.Fatalf("evicted before the soft grace period")
	}
	f.clock.Step(time.Minute)
	ev, _ := m.Synchronize(ctx)
	if len(ev) == 0 || f.graces["p"] != 10 {
		t.Fatalf("evicted %v with grace %d, want p with min(evictionMaxPodGracePeriod 10, pod 30)", ev, f.graces["p"])
	}
}

func TestManagerRunWakesOnSchedule(t *testing.T) {
	f := newFakeNode()
	f.pods = []*v1.Pod{testPod("a", "", 0)}
	m, _ := newTestManager(t, f, evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for !f.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run never waited for the monitoring interval")
		}
		time.Sleep(time.Millisecond)
	}
	f.mu.Lock()
	f.memWS = 1000 * mi
	f.mu.Unlock()
	f.clock.Step(DefaultMonitoringInterval)
	for {
		f.mu.Lock()
		n := len(f.log)
		f.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no eviction after the monitoring interval")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}
