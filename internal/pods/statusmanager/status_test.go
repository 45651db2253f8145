package statusmanager

import (
	"context"
	"encoding/json"
	"errors"
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
