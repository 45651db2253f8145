package sources

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func TestOperationString(t *testing.T) {
	for op, want := range map[Operation]string{ADD: "ADD", UPDATE: "UPDATE", DELETE: "DELETE", REMOVE: "REMOVE", RECONCILE: "RECONCILE", Operation(9): "Operation(9)"} {
		if got := op.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(op), got, want)
		}
	}
}

// send pushes a snapshot; because source channels are unbuffered, a second
// send also proves the previous snapshot was fully merged.
func send(t *testing.T, ch chan<- []*v1.Pod, pods ...*v1.Pod) {
	t.Helper()
	select {
	case ch <- pods:
	case <-time.After(waitTimeout):
		t.Fatalf("mux did not take a snapshot within %v", waitTimeout)
	}
}

func expectUpdate(t *testing.T, ch <-chan PodUpdate, op Operation, source string, uids ...types.UID) PodUpdate {
	t.Helper()
	u := recvUpdate(t, ch)
	if u.Op != op || u.Source != source || !reflect.DeepEqual(uidsOf(u.Pods), uids) {
		t.Fatalf("got %v %v from %q, want %v %v from %q", u.Op, uidsOf(u.Pods), u.Source, op, uids, source)
	}
	return u
}

func TestPodConfigEndToEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	mux := NewPodConfig(MuxConfig{Context: ctx, Clock: clk})
	updates := mux.Updates()

	fileCh := mux.Channel(FileSource)
	apiCh := mux.Channel(ApiserverSource)
	if again := mux.Channel(FileSource); again != fileCh {
		t.Fatalf("Channel must return the same channel for the same source")
	}
	both := sets.New(FileSource, ApiserverSource)
	if mux.SeenAllSources(both) {
		t.Fatalf("no source has delivered yet")
	}
	if !mux.SeenAllSources(sets.New[string]()) {
		t.Fatalf("an empty expectation is always met")
	}

	// An empty first snapshot marks the source seen and emits nothing.
	send(t, apiCh)
	send(t, apiCh)
	expectNoUpdate(t, updates)
	if !mux.SeenAllSources(sets.New(ApiserverSource)) || mux.SeenAllSources(both) {
		t.Fatalf("after the api snapshot only api should be seen")
	}

	a, b := testPod("uid-a", "a"), testPod("uid-b", "b")
	send(t, fileCh, a, b)
	added := expectUpdate(t, updates, ADD, FileSource, "uid-a", "uid-b")
	firstSeen := start.Format(time.RFC3339Nano)
	for _, p := range added.Pods {
		if p.Annotations[podutil.ConfigSourceAnnotationKey] != FileSource || p.Annotations[podutil.ConfigFirstSeenAnnotationKey] != firstSeen {
			t.Errorf("added pod %s annotations = %v", p.Name, p.Annotations)
		}
	}
	if a.Annotations != nil {
		t.Errorf("the mux must not mutate the pods a source sends")
	}
	send(t, fileCh, a, b) // same snapshot: nothing to emit
	if !mux.SeenAllSources(both) {
		t.Fatalf("both sources have delivered")
	}
	expectNoUpdate(t, updates)

	clk.Step(time.Minute)
	a2 := withPod(a, func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx" })
	send(t, fileCh, a2, b)
	updated := expectUpdate(t, updates, UPDATE, FileSource, "uid-a")
	if got := updated.Pods[0].Annotations[podutil.ConfigFirstSeenAnnotationKey]; got != firstSeen {
		t.Errorf("UPDATE must keep the first-seen time %q, got %q", firstSeen, got)
	}
	if updated.Pods[0].Spec.Containers[0].Image != "nginx" {
		t.Errorf("UPDATE must carry the new spec")
	}

	c := testPod("uid-c", "c")
	send(t, fileCh, a2, c)
	expectUpdate(t, updates, REMOVE, FileSource, "uid-b")
	expectUpdate(t, updates, ADD, FileSource, "uid-c")

	send(t, fileCh, a2, withPod(c, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }))
	expectUpdate(t, updates, RECONCILE, FileSource, "uid-c")

	now := metav1.NewTime(start)
	send(t, fileCh, withPod(a2, func(p *v1.Pod) { p.DeletionTimestamp = &now }), withPod(c, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }))
	expectUpdate(t, updates, DELETE, FileSource, "uid-a")

	// Sources are independent: the api source sees its own pods only.
	send(t, apiCh, testPod("uid-x", "x"))
	expectUpdate(t, updates, ADD, ApiserverSource, "uid-x")

	// Duplicates within one snapshot: the first wins.
	send(t, apiCh, testPod("uid-x", "x"), testPod("uid-x2", "x"))
	send(t, apiCh, testPod("uid-x", "x"))
	expectNoUpdate(t, updates)

	send(t, fileCh)
	expectUpdate(t, updates, REMOVE, FileSource, "uid-a", "uid-c")
	send(t, fileCh)
	expectNoUpdate(t, updates)
}

func TestPodConfigStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	mux := NewPodConfig(MuxConfig{Context: ctx})
	ch := mux.Channel(FileSource)
	mux.Channel(HTTPSource)
	// Nobody reads Updates. The first snapshot emits one ADD, each later
	// one a REMOVE and an ADD, so the last send leaves a merge blocked on
	// a full Updates channel: cancelling must still end it.
	sends := updatesBuffer/2 + 1
	for i := 0; i < sends; i++ {
		send(t, ch, testPod(fmt.Sprintf("uid-%d", i), fmt.Sprintf("p%d", i)))
	}
	cancel()
	done := make(chan struct{})
	go func() { mux.listeners.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("mux goroutines did not end after the context was cancelled")
	}
}
