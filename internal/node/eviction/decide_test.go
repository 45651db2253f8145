package eviction

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

func TestObserve(t *testing.T) {
	at := time.Unix(1000, 0)
	s := nodeSummary(at, 1024*mi, 900*mi)
	s.Node.Rlimit = &statsapi.RlimitStats{Time: metav1.NewTime(at), MaxPID: ptr(int64(32768)), NumOfRunningProcesses: ptr(int64(768))}
	s.Node.SystemContainers = []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
		Memory: &statsapi.MemoryStats{Time: metav1.NewTime(at), AvailableBytes: u64(200 * mi), WorkingSetBytes: u64(300 * mi)}}}
	obs := Observe(s)
	check := func(sig evictionapi.Signal, avail, capacity int64) {
		t.Helper()
		o, ok := obs[sig]
		if !ok {
			t.Fatalf("no %s observation", sig)
		}
		if o.Available.Value() != avail || o.Capacity.Value() != capacity || !o.Time.Equal(at) {
			t.Errorf("%s = %s of %s at %v, want %d of %d", sig, o.Available.String(), o.Capacity.String(), o.Time, avail, capacity)
		}
	}
	check(evictionapi.SignalMemoryAvailable, 124*mi, 1024*mi)
	check(evictionapi.SignalAllocatableMemoryAvailable, 200*mi, 500*mi)
	check(evictionapi.SignalNodeFsAvailable, 50<<30, 100<<30)
	check(evictionapi.SignalNodeFsInodesFree, 500, 1000)
	check(evictionapi.SignalImageFsAvailable, 50<<30, 100<<30)
	check(evictionapi.SignalImageFsInodesFree, 500, 1000)
	check(evictionapi.SignalPIDAvailable, 32000, 32768)
	if len(Observe(&statsapi.Summary{})) != 0 {
		t.Errorf("an empty summary gives observations")
	}
}

func ptr[T any](v T) *T { return &v }

func memObs(at time.Time, availMi int64) Observations {
	return Observations{evictionapi.SignalMemoryAvailable: {
		Available: *resource.NewQuantity(availMi*mi, resource.BinarySI),
		Capacity:  *resource.NewQuantity(1024*mi, resource.BinarySI), Time: at,
	}}
}

func TestEvaluateHardThresholdAndTransitionPeriod(t *testing.T) {
	ts := mustParse(evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}})
	t0 := time.Unix(1000, 0)
	transition := 30 * time.Second

	st, act := Evaluate(ts, State{}, memObs(t0, 500), t0, transition)
	if len(act) != 0 || len(st.Conditions) != 0 {
		t.Fatalf("no pressure: act %v conditions %v", act, st.Conditions)
	}
	t1 := t0.Add(10 * time.Second)
	st, act = Evaluate(ts, st, memObs(t1, 90), t1, transition)
	if len(act) != 1 || act[0].Signal != evictionapi.SignalMemoryAvailable {
		t.Fatalf("below the hard threshold: act = %v", act)
	}
	if !reflect.DeepEqual(st.Conditions, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Fatalf("conditions = %v", st.Conditions)
	}
	// Same stats again (not newer): met, but nothing to act on.
	st, act = Evaluate(ts, st, memObs(t1, 90), t1.Add(time.Second), transition)
	if len(act) != 0 || len(st.Met) != 1 {
		t.Fatalf("stale stats: act %v met %v", act, st.Met)
	}
	// Recovered: the condition stays for the transition period...
	t2 := t1.Add(10 * time.Second)
	st, act = Evaluate(ts, st, memObs(t2, 500), t2, transition)
	if len(act) != 0 || !HasCondition(st.Conditions, v1.NodeMemoryPressure) {
		t.Fatalf("within the transition period: act %v conditions %v", act, st.Conditions)
	}
	// ...and goes once it has passed since the last time it was met.
	t3 := t1.Add(time.Second + transition) // last met at t1+1s
	st, _ = Evaluate(ts, st, memObs(t3, 500), t3, transition)
	if len(st.Conditions) != 0 {
		t.Fatalf("after the transition period: conditions %v", st.Conditions)
	}
}

func TestEvaluateSoftGracePeriod(t *testing.T) {
	ts := mustParse(evictionapi.ThresholdConfig{Soft: map[string]string{"memory.available": "200Mi"}, SoftGracePeriod: map[string]string{"memory.available": "1m"}})
	t0 := time.Unix(1000, 0)
	st, act := Evaluate(ts, State{}, memObs(t0, 150), t0, time.Minute)
	if len(act) != 0 || !HasCondition(st.Conditions, v1.NodeMemoryPressure) {
		t.Fatalf("soft threshold just met: act %v conditions %v (the condition comes at once)", act, st.Conditions)
	}
	t1 := t0.Add(59 * time.Second)
	st, act = Evaluate(ts, st, memObs(t1, 150), t1, time.Minute)
	if len(act) != 0 {
		t.Fatalf("before the grace period: act %v", act)
	}
	// Recovering in between restarts the grace period.
	t2 := t0.Add(61 * time.Second)
	st2, act := Evaluate(ts, st, memObs(t2, 150), t2, time.Minute)
	if len(act) != 1 {
		t.Fatalf("after the grace period: act %v", act)
	}
	_ = st2
	st, _ = Evaluate(ts, st, memObs(t1.Add(time.Second), 500), t1.Add(time.Second), time.Minute)
	st, act = Evaluate(ts, st, memObs(t2, 150), t2, time.Minute)
	if len(act) != 0 {
		t.Fatalf("grace period restarted after recovery: act %v", act)
	}
}

func TestEvaluateMinimumReclaim(t *testing.T) {
	ts := mustParse(evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}, MinimumReclaim: map[string]string{"memory.available": "200Mi"}})
	t0 := time.Unix(1000, 0)
	st, act := Evaluate(ts, State{}, memObs(t0, 90), t0, 0)
	if len(act) != 1 {
		t.Fatalf("met: act %v", act)
	}
	// 250Mi available is above 100Mi but below 100Mi+200Mi: still acting.
	t1 := t0.Add(10 * time.Second)
	st, act = Evaluate(ts, st, memObs(t1, 250), t1, 0)
	if len(act) != 1 {
		t.Fatalf("minimum reclaim not reached: act %v", act)
	}
	t2 := t1.Add(10 * time.Second)
	_, act = Evaluate(ts, st, memObs(t2, 310), t2, 0)
	if len(act) != 0 {
		t.Fatalf("minimum reclaim reached: act %v", act)
	}
}

func TestEvaluateOrdersMemoryFirst(t *testing.T) {
	ts := mustParse(evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi", "nodefs.available": "60%", "pid.available": "1"}})
	at := time.Unix(1000, 0)
	obs := Observe(nodeSummary(at, 1024*mi, 1000*mi))
	_, act := Evaluate(ts, State{}, obs, at, time.Minute)
	if len(act) != 2 || act[0].Signal != evictionapi.SignalMemoryAvailable || act[1].Signal != evictionapi.SignalNodeFsAvailable {
		t.Fatalf("act = %v, want memory then nodefs (no pid observation)", act)
	}
}

func TestPlanReclaim(t *testing.T) {
	th := func(s evictionapi.Signal) []evictionapi.Threshold {
		return []evictionapi.Threshold{{Signal: s, Value: evictionapi.Value{Percentage: 0.1}}}
	}
	tests := []struct {
		name          string
		act           []evictionapi.Threshold
		dedicated     bool
		wantRes       v1.ResourceName
		wantCGC, wIGC bool
	}{
		{"memory has no node-level reclaim", th(evictionapi.SignalMemoryAvailable), false, v1.ResourceMemory, false, false},
		{"nodefs on a shared filesystem collects containers and images", th(evictionapi.SignalNodeFsAvailable), false, v1.ResourceEphemeralStorage, true, true},
		{"nodefs beside a dedicated imagefs collects nothing", th(evictionapi.SignalNodeFsInodesFree), true, evictionapi.ResourceInodes, false, false},
		{"imagefs collects containers and images", th(evictionapi.SignalImageFsAvailable), true, v1.ResourceEphemeralStorage, true, true},
		{"pids have no node-level reclaim", th(evictionapi.SignalPIDAvailable), false, evictionapi.ResourcePids, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := PlanReclaim(tc.act, tc.dedicated)
			if !ok || r.Resource != tc.wantRes || r.ContainerGC != tc.wantCGC || r.ImageGC != tc.wIGC {
				t.Errorf("plan = %+v, %v", r, ok)
			}
		})
	}
	if _, ok := PlanReclaim(nil, false); ok {
		t.Errorf("nothing to act on gives a plan")
	}
}

func TestMemcgThreshold(t *testing.T) {
	th := mustParse(evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}})[0]
	m := &statsapi.MemoryStats{AvailableBytes: u64(600 * mi), WorkingSetBytes: u64(400 * mi), UsageBytes: u64(700 * mi)}
	got, ok := MemcgThreshold(th, m)
	// capacity 1000Mi - 100Mi + 300Mi inactive file.
	if !ok || got != 1200*mi {
		t.Errorf("usage threshold = %d Mi, want 1200", got/mi)
	}
	if _, ok := MemcgThreshold(th, &statsapi.MemoryStats{}); ok {
		t.Errorf("threshold from empty stats")
	}
}
