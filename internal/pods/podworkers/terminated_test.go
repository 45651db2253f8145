package podworkers

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A Kill's Terminated channel closes once the pod is terminated: after
// its terminating sync, or at once when there is nothing to stop.
func TestKillTerminatedChannel(t *testing.T) {
	pw, rec, _ := newTest(t)

	unknown := make(chan struct{})
	pw.UpdatePod(Update{Pod: pod("x", "none", ""), Type: Kill, Terminated: unknown})
	if !closed(unknown) {
		t.Fatal("Kill of a pod without a worker: channel not closed at once")
	}

	rec.gate = make(chan struct{})
	rec.entered = make(chan struct{}, 10)
	p := pod("a", "web", "v1")
	pw.UpdatePod(Update{Pod: p})
	<-rec.entered // the sync holds the worker
	done := make(chan struct{})
	pw.UpdatePod(Update{Pod: p, Type: Kill, Terminated: done})
	if closed(done) || pw.IsTerminated("a") {
		t.Fatal("closed before the pod was stopped")
	}
	close(rec.gate)
	expect(t, rec, "sync a v1", "terminating a grace -")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed after the pod terminated")
	}
	if !pw.IsTerminated("a") {
		t.Fatal("IsTerminated false after termination")
	}
	expect(t, rec, "terminated a")

	again := make(chan struct{})
	pw.UpdatePod(Update{Pod: p, Type: Kill, Terminated: again})
	if !closed(again) {
		t.Fatal("Kill of a terminated pod: channel not closed at once")
	}
}

func TestSyncIf(t *testing.T) {
	pw, rec, _ := newTest(t)
	pw.UpdatePod(Update{Pod: pod("a", "static", "v1")})
	pw.UpdatePod(Update{Pod: pod("b", "other", "v1")})
	expectSet(t, rec, "sync a v1", "sync b v1")
	pw.SyncIf(func(p *v1.Pod) bool { return p.Name == "static" })
	expect(t, rec, "sync a v1")
	expectNothing(t, rec)
}

// expectSet waits for the calls in any order.
func expectSet(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	left := map[string]int{}
	for _, w := range want {
		left[w]++
	}
	for range want {
		select {
		case got := <-rec.notify:
			if left[got] == 0 {
				t.Fatalf("unexpected call %q (want %v)", got, want)
			}
			left[got]--
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %v", left)
		}
	}
}

func TestActive(t *testing.T) {
	pods := []*v1.Pod{pod("new", "n", ""), pod("run", "r", ""), pod("stop", "s", ""), pod("gone", "g", "")}
	states := map[types.UID]PodState{
		"run": {State: Syncing}, "stop": {State: Terminating}, "gone": {State: Terminated},
	}
	var got []types.UID
	for _, p := range Active(pods, states) {
		got = append(got, p.UID)
	}
	if len(got) != 2 || got[0] != "new" || got[1] != "run" {
		t.Fatalf("Active = %v, want [new run]: pods not handed to a worker yet and syncing ones", got)
	}
}
