package statusmanager

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

func TestSetKeepsTerminalPhase(t *testing.T) {
	changes := 0
	m := NewManager(func(types.UID) { changes++ })
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	m.Set(p, v1.PodStatus{Phase: v1.PodSucceeded})
	m.Set(p, v1.PodStatus{Phase: v1.PodRunning})
	if got, _ := m.Get("u"); got.Phase != v1.PodSucceeded {
		t.Fatalf("phase went back to %s", got.Phase)
	}
	m.Set(p, v1.PodStatus{Phase: v1.PodSucceeded})
	if changes != 1 {
		t.Fatalf("onChange called %d times, want 1 (later sets changed nothing)", changes)
	}
}

func TestMergeStatus(t *testing.T) {
	api := v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: "example.com/gate", Status: v1.ConditionTrue},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue},
	}}
	kubelet := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	got := MergeStatus(api, kubelet)
	if got.Phase != v1.PodFailed {
		t.Fatalf("phase %s: a terminal phase in the API must not go back", got.Phase)
	}
	want := map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionTrue, "example.com/gate": v1.ConditionTrue, v1.DisruptionTarget: v1.ConditionTrue}
	if len(got.Conditions) != len(want) {
		t.Fatalf("conditions %v", got.Conditions)
	}
	for _, c := range got.Conditions {
		if want[c.Type] != c.Status {
			t.Fatalf("condition %s = %s, want %s", c.Type, c.Status, want[c.Type])
		}
	}
}

func TestMergeStatusEvictionDisruptionTarget(t *testing.T) {
	api := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, Reason: "Old"}}}
	evicted := v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Conditions: []v1.PodCondition{
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet},
	}}
	got := MergeStatus(api, evicted)
	if len(got.Conditions) != 1 || got.Conditions[0].Reason != v1.PodReasonTerminationByKubelet {
		t.Errorf("moving to Failed: conditions %+v, want the kubelet's DisruptionTarget", got.Conditions)
	}
	// Once terminal in the API, the API's condition stays.
	api.Phase = v1.PodFailed
	if got := MergeStatus(api, evicted); len(got.Conditions) != 1 || got.Conditions[0].Reason != "Old" {
		t.Errorf("already terminal: conditions %+v, want the API's", got.Conditions)
	}
}

func TestStatusPatchCarriesUID(t *testing.T) {
	patch, empty, err := statusPatch("u1", v1.PodStatus{Phase: v1.PodPending}, v1.PodStatus{Phase: v1.PodRunning})
	if err != nil || empty {
		t.Fatal(err, empty)
	}
	var m struct {
		Metadata struct{ UID string }   `json:"metadata"`
		Status   struct{ Phase string } `json:"status"`
	}
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.UID != "u1" || m.Status.Phase != "Running" {
		t.Fatalf("patch %s", patch)
	}
}

func TestAPISyncWritesStatusAndDeletesTerminatedPods(t *testing.T) {
	now := metav1.Now()
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	cs := fake.NewClientset(apiPod)
	m := NewManager(nil)
	var terminated atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	go m.RunAPISync(ctx, APISyncConfig{
		Client: kubeclienttest.Wrap(cs), Clock: clk, ResyncPeriod: 10 * time.Second,
		Target:     func(uid types.UID) (Target, bool) { return Target{Namespace: "default", Name: "web", UID: uid}, true },
		Terminated: func(types.UID) bool { return terminated.Load() },
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	m.Set(apiPod, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.9"})
	waitFor("status patched", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP == "10.88.0.9"
	})
	// The API marks the pod for deletion; once terminated, it is deleted.
	p, _ := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	p.DeletionTimestamp = &now
	cs.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
	terminated.Store(true)
	m.Set(apiPod, v1.PodStatus{Phase: v1.PodSucceeded})
	waitFor("pod deleted", func() bool {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err != nil
	})
}

// A status is only written to the API object it was built on: one built
// before a static pod's mirror pod was known asks for a rebuild instead.
func TestAPISyncWritesOnlyToTheObjectTheStatusWasBuiltOn(t *testing.T) {
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node", Namespace: "kube-system", UID: "mirror-uid"},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}}
	cs := fake.NewClientset(mirror)
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node", Namespace: "kube-system", UID: "static-uid"}}
	m := NewManager(nil)
	// Stored before RunAPISync starts: not lost.
	m.SetBuiltOn(static, v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}, "")
	rebuilt := make(chan types.UID, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.RunAPISync(ctx, APISyncConfig{
		Client: kubeclienttest.Wrap(cs), Clock: testingclock.NewFakeClock(time.Unix(1000, 0)), ResyncPeriod: 10 * time.Second,
		Target: func(types.UID) (Target, bool) {
			return Target{Namespace: "kube-system", Name: "etcd-node", UID: "mirror-uid"}, true
		},
		Rebuild: func(uid types.UID) { rebuilt <- uid },
	})
	select {
	case uid := <-rebuilt:
		if uid != "static-uid" {
			t.Fatalf("rebuild asked for %s", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no rebuild asked for a status built on nothing")
	}
	if acts := cs.Actions(); len(acts) != 0 {
		t.Fatalf("API calls %v for a status built on nothing", acts)
	}
	m.SetBuiltOn(static, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.3", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}, "mirror-uid")
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := cs.CoreV1().Pods("kube-system").Get(ctx, "etcd-node", metav1.GetOptions{})
		if err == nil && p.Status.PodIP == "10.88.0.3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status built on the mirror pod not written: %+v %v", p.Status, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSetKeepsBasis(t *testing.T) {
	m := NewManager(nil)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	m.Set(p, v1.PodStatus{Phase: v1.PodPending})
	if st, _ := m.Lookup("u"); st.Basis != "u" {
		t.Fatalf("a new status's basis %q, want the pod's UID", st.Basis)
	}
	m.SetBuiltOn(p, v1.PodStatus{Phase: v1.PodRunning}, "mirror")
	m.Set(p, v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"})
	if st, _ := m.Lookup("u"); st.Basis != "mirror" || st.Status.Reason != "Evicted" {
		t.Fatalf("Set changed the basis to %q (status %+v)", st.Basis, st.Status)
	}
}

// Times the API keeps to the second: a status that differs only below that
// is not written again and again.
func TestStatusPatchEmptyBelowTheAPIsPrecision(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)
	api := v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: at}}
	kubelet := v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: at.Add(300 * time.Millisecond)}}
	if _, empty, err := statusPatch("u1", api, kubelet); err != nil || !empty {
		t.Fatalf("patch empty=%v err=%v, want an empty patch", empty, err)
	}
	kubelet.Phase = v1.PodSucceeded
	if _, empty, err := statusPatch("u1", api, kubelet); err != nil || empty {
		t.Fatalf("patch empty=%v err=%v for a new phase", empty, err)
	}
}

// While the API server is away, a failed status is tried again every
// second, not only at the next resync: it reaches the API within a second
// of its return.
func TestAPISyncRetriesFailedWritesSoon(t *testing.T) {
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	cs := fake.NewClientset(apiPod)
	var down atomic.Bool
	down.Store(true)
	cs.PrependReactor("*", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	m := NewManager(nil)
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.RunAPISync(ctx, APISyncConfig{
		Client: kubeclienttest.Wrap(cs), Clock: clk, ResyncPeriod: 10 * time.Second,
		Target: func(uid types.UID) (Target, bool) { return Target{Namespace: "default", Name: "web", UID: uid}, true },
	})
	m.Set(apiPod, v1.PodStatus{Phase: v1.PodSucceeded})
	waitUntil(t, "the retry timer beside the resync ticker", func() bool { return clk.Waiters() >= 2 })
	down.Store(false)
	clk.Step(retryPeriod)
	waitUntil(t, "status written a second after the API came back", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodSucceeded
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gatedClient lets a test hold a pod's status GET: the status sync must go
// on with other pods meanwhile.
type gatedClient struct {
	kubeclient.Interface
	gate func(name string)
}

func (c gatedClient) CoreV1() kubeclient.CoreV1Interface {
	return gatedCore{c.Interface.CoreV1(), c.gate}
}

type gatedCore struct {
	kubeclient.CoreV1Interface
	gate func(name string)
}

func (c gatedCore) Pods(ns string) kubeclient.PodInterface {
	return gatedPods{c.CoreV1Interface.Pods(ns), c.gate}
}

type gatedPods struct {
	kubeclient.PodInterface
	gate func(name string)
}

func (p gatedPods) Get(ctx context.Context, name string, o metav1.GetOptions) (*v1.Pod, error) {
	p.gate(name)
	return p.PodInterface.Get(ctx, name, o)
}

// Many pods starting or stopping at once: one pod's slow write does not
// hold back the others', and one pod's status is never written by two
// writers at once (a change while its write is in flight is written after
// it, the newest status last).
func TestAPISyncWritesPodsInParallelOnePodAtATime(t *testing.T) {
	slow := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "default", UID: "u-slow"}}
	fast := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fast", Namespace: "default", UID: "u-fast"}}
	cs := fake.NewClientset(slow, fast)
	release := make(chan struct{})
	var inSlow, maxInSlow atomic.Int32
	gate := func(name string) {
		if name != "slow" {
			return
		}
		n := inSlow.Add(1)
		defer inSlow.Add(-1)
		for {
			m := maxInSlow.Load()
			if n <= m || maxInSlow.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
	}
	names := map[types.UID]string{"u-slow": "slow", "u-fast": "fast"}
	m := NewManager(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.RunAPISync(ctx, APISyncConfig{
		Client: gatedClient{kubeclienttest.Wrap(cs), gate}, Clock: testingclock.NewFakeClock(time.Unix(1000, 0)), ResyncPeriod: time.Hour,
		Target: func(uid types.UID) (Target, bool) {
			return Target{Namespace: "default", Name: names[uid], UID: uid}, true
		},
	})
	m.Set(slow, v1.PodStatus{Phase: v1.PodPending})
	waitUntil(t, "the slow pod's write in flight", func() bool { return inSlow.Load() == 1 })
	m.Set(slow, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.1"})
	m.Set(slow, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.2"})
	m.Set(fast, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.3"})
	waitUntil(t, "the fast pod's status written while the slow one's waits", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "fast", metav1.GetOptions{})
		return err == nil && p.Status.PodIP == "10.88.0.3"
	})
	close(release)
	waitUntil(t, "the slow pod's newest status written", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "slow", metav1.GetOptions{})
		return err == nil && p.Status.PodIP == "10.88.0.2"
	})
	if n := maxInSlow.Load(); n != 1 {
		t.Fatalf("%d writes of one pod's status at once, want 1", n)
	}
}

func TestSyncQueue(t *testing.T) {
	q := newSyncQueue()
	q.add("a")
	q.add("b")
	q.add("a") // queued already: once
	if uid, _ := q.next(); uid != "a" {
		t.Fatalf("next %q, want a", uid)
	}
	q.add("a") // in flight: again after it
	if uid, _ := q.next(); uid != "b" {
		t.Fatalf("next %q, want b", uid)
	}
	if uid, ok := q.next(); ok {
		t.Fatalf("next %q while a is in flight", uid)
	}
	q.done("a")
	if uid, _ := q.next(); uid != "a" {
		t.Fatalf("next %q, want a again", uid)
	}
	q.done("a")
	q.done("b")
	if uid, ok := q.next(); ok {
		t.Fatalf("next %q from an empty queue", uid)
	}
}

func TestNeedsResync(t *testing.T) {
	sec := metav1.NewTime(time.Unix(1000, 0))
	nanos := metav1.NewTime(time.Unix(1000, 500))
	running := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.9", StartTime: &sec,
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: sec}}}
	withNanos := *running.DeepCopy()
	withNanos.Conditions[0].LastTransitionTime = nanos
	notReady := *running.DeepCopy()
	notReady.Conditions[0].Status = v1.ConditionFalse
	withGate := *running.DeepCopy()
	withGate.Conditions = append(withGate.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
	now := metav1.Now()
	pod := func(uid types.UID, st v1.PodStatus, deleting bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid}, Status: st}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		stored     Stored
		obj        *v1.Pod
		terminated bool
		want       bool
	}{
		{"the API holds the status", Stored{running, "u1"}, pod("u1", running, false), false, false},
		{"it differs only below the API's precision", Stored{withNanos, "u1"}, pod("u1", running, false), false, false},
		{"a controller's condition the kubelet does not own", Stored{running, "u1"}, pod("u1", withGate, false), false, false},
		{"the status changed", Stored{notReady, "u1"}, pod("u1", running, false), false, true},
		{"the API lost the status", Stored{running, "u1"}, pod("u1", v1.PodStatus{}, false), false, true},
		{"built on another object", Stored{running, "static"}, pod("mirror", running, false), false, true},
		{"marked for deletion, still terminating", Stored{running, "u1"}, pod("u1", running, true), false, false},
		{"marked for deletion and terminated: the final delete", Stored{running, "u1"}, pod("u1", running, true), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsResync(tc.stored, tc.obj, tc.terminated); got != tc.want {
				t.Errorf("NeedsResync = %v, want %v", got, tc.want)
			}
		})
	}
}

// With Observed, the periodic resync reads back only the pods whose status
// the API does not hold (as upstream), not every pod every period.
func TestAPISyncResyncsOnlyPodsTheAPIDoesNotHold(t *testing.T) {
	status := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.9"}
	synced := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "synced", Namespace: "default", UID: "u1"}, Status: status}
	stale := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: "default", UID: "u2"}}
	cs := fake.NewClientset(synced.DeepCopy(), stale.DeepCopy())
	m := NewManager(nil)
	m.Set(synced, status)
	m.Set(stale, status)
	// Drain what Set queued: only the resync is under test.
	for range 2 {
		<-m.dirty
	}
	observed := map[types.UID]*v1.Pod{"u1": synced, "u2": stale}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	go m.RunAPISync(ctx, APISyncConfig{
		Client: kubeclienttest.Wrap(cs), Clock: clk, ResyncPeriod: 10 * time.Second,
		Target: func(uid types.UID) (Target, bool) {
			p := observed[uid]
			return Target{Namespace: p.Namespace, Name: p.Name, UID: uid}, true
		},
		Observed: func(uid types.UID) (*v1.Pod, bool) { p, ok := observed[uid]; return p, ok },
	})
	waitUntil(t, "the resync ticker", func() bool { return clk.HasWaiters() })
	clk.Step(10 * time.Second)
	waitUntil(t, "the stale pod's status written", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "stale", metav1.GetOptions{})
		return err == nil && p.Status.PodIP == "10.88.0.9"
	})
	for _, a := range cs.Actions() {
		if named, ok := a.(interface{ GetName() string }); ok && a.GetResource().Resource == "pods" && named.GetName() == "synced" {
			t.Errorf("the resync touched the pod the API already holds: %s %s", a.GetVerb(), named.GetName())
		}
	}
}

func TestWatchTrusted(t *testing.T) {
	prev := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		since func() (time.Time, bool)
		want  bool
	}{
		{"no watch state: always", nil, true},
		{"no watch open (API server away, reflector backing off)", func() (time.Time, bool) { return time.Time{}, false }, false},
		{"opened after the previous resync", func() (time.Time, bool) { return prev.Add(time.Second), true }, false},
		{"open since the previous resync", func() (time.Time, bool) { return prev, true }, true},
		{"open since long before", func() (time.Time, bool) { return prev.Add(-time.Hour), true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := watchTrusted(tc.since, prev); got != tc.want {
				t.Errorf("watchTrusted = %v, want %v", got, tc.want)
			}
		})
	}
}

// While the pod watch is not open, or opened only since the last resync,
// the watched copies may miss others' writes (the node controller marking
// pods not Ready while the kubelet was cut off): the resync reads every
// pod back from the API. Once the watch has been open for a whole period,
// it trusts the watched copies again.
func TestAPISyncReadsEveryPodBackUntilTheWatchIsCurrent(t *testing.T) {
	status := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.9"}
	synced := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "synced", Namespace: "default", UID: "u1"}, Status: status}
	// What the API holds: the node controller marked it not Ready while
	// the watch was down; the watched copy (synced) does not show it.
	inAPI := synced.DeepCopy()
	inAPI.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}
	// marker's watched copy never shows its status, so every resync,
	// trusting or not, reads it back: it shows that a resync ran.
	marker := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "marker", Namespace: "default", UID: "u2"}}
	observed := map[types.UID]*v1.Pod{"u1": synced, "u2": marker}
	cs := fake.NewClientset(inAPI, marker.DeepCopy())
	m := NewManager(nil)
	m.Set(synced, status)
	m.Set(marker, status)
	for range 2 {
		<-m.dirty // only the resync is under test
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	var mu sync.Mutex
	open, since := false, time.Time{}
	go m.RunAPISync(ctx, APISyncConfig{
		Client: kubeclienttest.Wrap(cs), Clock: clk, ResyncPeriod: 10 * time.Second,
		Target: func(uid types.UID) (Target, bool) {
			return Target{Namespace: "default", Name: observed[uid].Name, UID: uid}, true
		},
		Observed: func(uid types.UID) (*v1.Pod, bool) { return observed[uid], true },
		WatchOpenSince: func() (time.Time, bool) {
			mu.Lock()
			defer mu.Unlock()
			return since, open
		},
	})
	gets := func(name string) int {
		n := 0
		for _, a := range cs.Actions() {
			if g, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "get" && g.GetName() == name {
				n++
			}
		}
		return n
	}
	resync := func(step string) (synced int) {
		t.Helper()
		before := gets("marker")
		clk.Step(10 * time.Second)
		waitUntil(t, step, func() bool { return gets("marker") > before })
		return gets("synced")
	}
	waitUntil(t, "the resync ticker", func() bool { return clk.HasWaiters() })
	resync("resync with no watch open")
	waitUntil(t, "the pod read back and its status written", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "synced", metav1.GetOptions{})
		return err == nil && len(p.Status.Conditions) == 0
	})
	mu.Lock()
	open, since = true, clk.Now().Add(time.Second)
	mu.Unlock()
	n := gets("synced")
	resync("resync with a watch opened since the last one")
	waitUntil(t, "the pod read back again", func() bool { return gets("synced") > n })
	n = gets("synced")
	if got := resync("resync with the watch open for a whole period"); got != n {
		t.Errorf("the resync read the pod back %d times with the watch current", got-n)
	}
}
