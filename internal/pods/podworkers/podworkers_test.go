package podworkers

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

// recorder is a Syncer that records calls and can block SyncPod.
type recorder struct {
	mu       sync.Mutex
	calls    []string
	gate     chan struct{} // when set, SyncPod waits on it
	entered  chan struct{} // when set, SyncPod signals it first
	terminal map[types.UID]bool
	requeue  time.Duration
	notify   chan string
	// termBlock, when set, makes SyncTerminatingPod wait for its context
	// to end (a termination interrupted by a shorter grace period).
	termBlock bool
	// syncBlock, when set, makes SyncPod wait for its context to end (a
	// start cut short by a Kill).
	syncBlock bool
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
	r.notify <- s
}

func (r *recorder) SyncPod(ctx context.Context, pod *v1.Pod) (Outcome, error) {
	if r.entered != nil {
		r.entered <- struct{}{}
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	block := r.syncBlock
	r.syncBlock = false
	r.mu.Unlock()
	if block {
		<-ctx.Done()
		r.add("sync " + string(pod.UID) + " cancelled")
		return Outcome{}, ctx.Err()
	}
	r.add("sync " + string(pod.UID) + " " + pod.Spec.NodeName)
	return Outcome{Terminal: r.terminal[pod.UID], RequeueAfter: r.requeue}, nil
}

func (r *recorder) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace *int64) error {
	g := "-"
	if grace != nil {
		g = fmt.Sprint(*grace)
	}
	deleted := ""
	if pod.DeletionTimestamp != nil {
		deleted = " deleted"
	}
	r.add("terminating " + string(pod.UID) + " grace " + g + deleted)
	r.mu.Lock()
	block := r.termBlock
	r.termBlock = false // only the first termination blocks
	r.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (r *recorder) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, removed bool) error {
	if removed {
		r.add("removed " + string(pod.UID))
	} else {
		r.add("terminated " + string(pod.UID))
	}
	return nil
}

func newTest(t *testing.T) (*PodWorkers, *recorder, *testingclock.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	rec := &recorder{notify: make(chan string, 100), terminal: map[types.UID]bool{}}
	pw := New(ctx, Config{Syncer: rec, Clock: clk, ResyncInterval: time.Minute, BackOffPeriod: 10 * time.Second})
	t.Cleanup(func() { cancel(); pw.Wait() })
	return pw, rec, clk
}

func pod(uid, name, marker string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"}, Spec: v1.PodSpec{NodeName: marker}}
}

func expect(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-rec.notify:
			if got != w {
				t.Fatalf("call = %q, want %q", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %q", w)
		}
	}
}

func expectNothing(t *testing.T, rec *recorder) {
	t.Helper()
	select {
	case got := <-rec.notify:
		t.Fatalf("unexpected call %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestLastUpdateWins(t *testing.T) {
	pw, rec, _ := newTest(t)
	rec.gate = make(chan struct{})
	rec.entered = make(chan struct{}, 10)
	pw.UpdatePod(Update{Pod: pod("a", "web", "v1")})
	<-rec.entered
	// While v1 syncs, two more updates arrive: only the newest is synced next.
	pw.UpdatePod(Update{Pod: pod("a", "web", "v2")})
	pw.UpdatePod(Update{Pod: pod("a", "web", "v3")})
	close(rec.gate)
	expect(t, rec, "sync a v1", "sync a v3")
	expectNothing(t, rec)
}

func TestRemovedPodTerminatesThenIsRemoved(t *testing.T) {
	pw, rec, _ := newTest(t)
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p})
	expect(t, rec, "sync a v1")
	pw.UpdatePod(Update{Pod: p, Type: Kill, Removed: true})
	expect(t, rec, "terminating a grace -", "removed a")
	// Further syncs of a terminated pod do nothing.
	pw.UpdatePod(Update{Pod: p})
	expectNothing(t, rec)
	if !pw.Forget("a") {
		t.Fatal("Forget of a cleaned-up pod failed")
	}
	// The same UID may start again once forgotten.
	pw.UpdatePod(Update{Pod: p})
	expect(t, rec, "sync a v1")
}

func TestTerminalPodStopsButKeepsContainers(t *testing.T) {
	pw, rec, _ := newTest(t)
	rec.terminal["a"] = true
	pw.UpdatePod(Update{Pod: pod("a", "job", "v1")})
	expect(t, rec, "sync a v1", "terminating a grace -", "terminated a")
	if st := pw.States()["a"]; st.State != Terminated || st.Removed {
		t.Fatalf("state = %+v, want terminated, not removed", st)
	}
}

func TestEditedStaticPodWaitsForOldOne(t *testing.T) {
	pw, rec, _ := newTest(t)
	old, edited := pod("old", "web", "v1"), pod("new", "web", "v2")
	pw.UpdatePod(Update{Pod: old})
	expect(t, rec, "sync old v1")
	// The edit arrives as REMOVE old + ADD new: the new pod must not start
	// before the old one has terminated.
	pw.UpdatePod(Update{Pod: old, Type: Kill, Removed: true})
	pw.UpdatePod(Update{Pod: edited})
	seen := []string{}
	for len(seen) < 3 {
		select {
		case c := <-rec.notify:
			seen = append(seen, c)
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out; calls so far %v", seen)
		}
	}
	term, start := -1, -1
	for i, c := range seen {
		switch c {
		case "terminating old grace -":
			term = i
		case "sync new v2":
			start = i
		}
	}
	if term < 0 || start < 0 || start < term {
		t.Fatalf("calls %v: the new pod must start after the old one terminated", seen)
	}
}

func TestSyncDueHonoursRequeue(t *testing.T) {
	pw, rec, clk := newTest(t)
	rec.requeue = 20 * time.Second
	pw.UpdatePod(Update{Pod: pod("a", "web", "v1")})
	expect(t, rec, "sync a v1")
	time.Sleep(10 * time.Millisecond) // let the worker record its next sync time
	clk.Step(19 * time.Second)
	pw.SyncDue()
	expectNothing(t, rec)
	clk.Step(time.Second)
	pw.SyncDue()
	expect(t, rec, "sync a v1")
}

// kubelet_pod_worker_duration_seconds counts each step by operation type,
// as upstream: create (first sync), update (new spec), sync, kill,
// terminated.
func TestPodWorkerDurationMetric(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	rec := &recorder{notify: make(chan string, 100), terminal: map[types.UID]bool{}}
	m := metrics.New()
	pw := New(ctx, Config{Syncer: rec, Clock: clk, ResyncInterval: time.Minute, BackOffPeriod: 10 * time.Second, Metrics: m})
	t.Cleanup(func() { cancel(); pw.Wait() })
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p})
	expect(t, rec, "sync a v1")
	pw.UpdatePod(Update{Pod: pod("a", "web", "v2")})
	expect(t, rec, "sync a v2")
	pw.Sync("a")
	expect(t, rec, "sync a v2")
	pw.UpdatePod(Update{Pod: p, Type: Kill, Removed: true})
	expect(t, rec, "terminating a grace -", "removed a")
	want := map[string]uint64{"create": 1, "update": 1, "sync": 1, "kill": 1, "terminated": 1}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.PodWorkerDuration)
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := map[string]uint64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, metric := range mf.GetMetric() {
				got[metric.GetLabel()[0].GetValue()] = metric.GetHistogram().GetSampleCount()
			}
		}
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod_worker_duration_seconds counts %v, want %v", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// A Kill carries the pod as the API has it now (its deletion timestamp):
// the termination and the status computed from it see that pod, not the
// one last synced (upstream's pod worker keeps the newest pod too).
func TestKillCarriesTheDeletedPod(t *testing.T) {
	pw, rec, _ := newTest(t)
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p})
	expect(t, rec, "sync a v1")
	deleted := p.DeepCopy()
	now := metav1.Now()
	grace := int64(30)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &now, &grace
	pw.UpdatePod(Update{Pod: deleted, Type: Kill, GracePeriod: &grace})
	expect(t, rec, "terminating a grace 30 deleted", "terminated a")
}

// A second Kill with a shorter grace period interrupts the termination in
// flight, which starts again with the shorter one (kubectl delete
// --grace-period=1 after a delete with the default 30 s).
func TestShorterGracePeriodRestartsTermination(t *testing.T) {
	pw, rec, _ := newTest(t)
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p})
	expect(t, rec, "sync a v1")
	rec.mu.Lock()
	rec.termBlock = true
	rec.mu.Unlock()
	long, short := int64(100), int64(1)
	pw.UpdatePod(Update{Pod: p, Type: Kill, GracePeriod: &long})
	expect(t, rec, "terminating a grace 100")
	// A longer one changes nothing.
	longer := int64(200)
	pw.UpdatePod(Update{Pod: p, Type: Kill, GracePeriod: &longer})
	expectNothing(t, rec)
	pw.UpdatePod(Update{Pod: p, Type: Kill, GracePeriod: &short})
	expect(t, rec, "terminating a grace 1", "terminated a")
}

// A Kill cancels the sync in flight (a start waiting for the runtime or a
// volume): the pod terminates at once rather than after the start it makes
// pointless, and without the back-off of a failed sync. Another update
// does not cancel it.
func TestKillCancelsTheSyncInFlight(t *testing.T) {
	pw, rec, _ := newTest(t)
	rec.syncBlock = true
	rec.entered = make(chan struct{}, 10)
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p})
	<-rec.entered
	pw.UpdatePod(Update{Pod: pod("a", "web", "v2")})
	expectNothing(t, rec)
	deleted := p.DeepCopy()
	now := metav1.Now()
	grace := int64(30)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &now, &grace
	pw.UpdatePod(Update{Pod: deleted, Type: Kill, GracePeriod: &grace})
	expect(t, rec, "sync a cancelled", "terminating a grace 30 deleted", "terminated a")
}

// A pod added again with the UID of a pod that is stopping (a static pod
// whose manifest was removed and put back) is marked to restart, as
// upstream's restartRequested: the old worker finishes its termination
// and is not restarted in place; housekeeping forgets it and starts the
// pod afresh. A Create of an unknown or syncing pod is a plain sync.
func TestCreateOfStoppingPodRequestsRestart(t *testing.T) {
	pw, rec, _ := newTest(t)
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p, Type: Create})
	expect(t, rec, "sync a v1")
	pw.UpdatePod(Update{Pod: pod("a", "web", "v2"), Type: Create})
	expect(t, rec, "sync a v2")
	if pw.States()["a"].RestartRequested {
		t.Fatal("restart requested for a pod that was never asked to stop")
	}
	pw.UpdatePod(Update{Pod: p, Type: Kill, Removed: true})
	expect(t, rec, "terminating a grace -", "removed a")
	pw.UpdatePod(Update{Pod: p, Type: Create})
	expectNothing(t, rec)
	st := pw.States()["a"]
	if st.State != Terminated || !st.Cleaned || !st.RestartRequested {
		t.Fatalf("state = %+v, want terminated, cleaned, restart requested", st)
	}
	if !pw.Forget("a") {
		t.Fatal("Forget of a finished worker failed")
	}
	pw.UpdatePod(Update{Pod: p, Type: Create})
	expect(t, rec, "sync a v1")
	if pw.States()["a"].RestartRequested {
		t.Fatal("the new worker carries the old one's restart request")
	}
}
