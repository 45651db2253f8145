package sources

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

// The state follows the watches the reflector opens: open from the
// moment one is handed out, closed when it ends or reports an error, and
// a late end of an older watch does not close the newer one.
func TestWatchStateFollowsTheWatches(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	state := NewWatchState(clk)
	var fakes []*watch.FakeWatcher
	lw := trackedListWatch{state: state, ListerWatcherWithContext: cache.ToListerWatcherWithContext(&cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) { return &v1.PodList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			f := watch.NewFake()
			fakes = append(fakes, f)
			return f, nil
		},
	})}
	expect := func(step string, wantOpen bool, wantSince time.Time) {
		t.Helper()
		// Closing happens on the tracked watch's goroutine.
		deadline := time.Now().Add(5 * time.Second)
		for {
			since, open := state.OpenSince()
			if open == wantOpen && (!open || since.Equal(wantSince)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: OpenSince = %v, %v; want %v, %v", step, since, open, wantSince, wantOpen)
			}
			time.Sleep(time.Millisecond)
		}
	}
	expect("before any watch", false, time.Time{})

	w1, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("watch 1 open", true, clk.Now())
	go fakes[0].Add(&v1.Pod{})
	if ev := <-w1.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("event %v, want Added passed on", ev.Type)
	}
	go fakes[0].Error(&metav1.Status{Reason: metav1.StatusReasonGone})
	if ev := <-w1.ResultChan(); ev.Type != watch.Error {
		t.Fatalf("event %v, want Error passed on", ev.Type)
	}
	expect("watch 1 reported an error", false, time.Time{})

	clk.SetTime(time.Unix(1060, 0))
	w2, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("watch 2 open", true, time.Unix(1060, 0))
	w1.Stop()
	if _, ok := <-w1.ResultChan(); ok {
		t.Fatal("watch 1's channel still open after Stop")
	}
	expect("watch 1 ended late", true, time.Unix(1060, 0))

	fakes[1].Stop() // the API server ends the watch
	if _, ok := <-w2.ResultChan(); ok {
		t.Fatal("watch 2's channel open after the server ended it")
	}
	expect("watch 2 ended", false, time.Time{})
	w2.Stop()
}
