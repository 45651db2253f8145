package events

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// ringBroadcaster is the standalone node's recorder: a Broadcaster whose
// sink is r, running until the test ends.
func ringBroadcaster(t *testing.T, r *Ring, clk *clocktesting.FakeClock) *Broadcaster {
	b := NewBroadcaster(BroadcasterConfig{Sink: r, Scheme: kubeclient.Scheme, Clock: clk,
		Source: v1.EventSource{Component: "kubelet", Host: "node1"}})
	start(t, b)
	return b
}

// await waits until r holds an event for which ok holds, and returns r's
// events then.
func await(t *testing.T, r *Ring, ok func([]v1.Event) bool) []v1.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if got := r.List(); ok(got) {
			return got
		}
		select {
		case <-r.Changed():
		case <-timeout:
			t.Fatalf("the ring never held what was expected; it holds %+v", r.List())
		}
	}
}

func TestRingStoresTheBroadcastersEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	r := NewRing(RingConfig{Clock: clk})
	b := ringBroadcaster(t, r, clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", UID: "u1"}}

	b.Eventf(pod, v1.EventTypeNormal, Started, "Started container %s", "main")
	got := await(t, r, func(ev []v1.Event) bool { return len(ev) == 1 })
	e := got[0]
	wantName := fmt.Sprintf("web-node1.%x", clk.Now().UnixNano())
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web-node1", Namespace: "default", UID: "u1"}
	if e.Name != wantName || e.Namespace != "default" || e.InvolvedObject != want || e.Reason != "Started" ||
		e.Message != "Started container main" || e.Count != 1 || e.Type != v1.EventTypeNormal ||
		e.Source != (v1.EventSource{Component: "kubelet", Host: "node1"}) || e.ReportingController != "kubelet" || e.ReportingInstance != "node1" ||
		!e.FirstTimestamp.Equal(&e.LastTimestamp) || !e.FirstTimestamp.Time.Equal(clk.Now()) || e.ResourceVersion == "" ||
		!e.CreationTimestamp.Equal(&e.FirstTimestamp) {
		t.Fatalf("event = %+v", e)
	}

	// The same event again: the broadcaster patches it, one event counted.
	clk.Step(time.Second)
	b.Eventf(pod, v1.EventTypeNormal, Started, "Started container %s", "main")
	got = await(t, r, func(ev []v1.Event) bool { return len(ev) == 1 && ev[0].Count == 2 })
	if got[0].Name != wantName || !got[0].LastTimestamp.Time.Equal(clk.Now()) || got[0].ResourceVersion == e.ResourceVersion ||
		!got[0].FirstTimestamp.Equal(&e.FirstTimestamp) {
		t.Fatalf("repeated event = %+v", got[0])
	}

	// A progress update is one more occurrence, its note after the message
	// and never stored as an annotation.
	Progressf(b, pod, v1.EventTypeNormal, "Pulling", "1.0 MiB of 4.0 MiB (25%)", "Pulling image %q", "busybox")
	Progressf(b, pod, v1.EventTypeNormal, "Pulling", "2.0 MiB of 4.0 MiB (50%)", "Pulling image %q", "busybox")
	got = await(t, r, func(ev []v1.Event) bool { return len(ev) == 2 && ev[1].Count == 2 })
	if p := got[1]; p.Message != `Pulling image "busybox": 2.0 MiB of 4.0 MiB (50%)` || len(p.Annotations) != 0 {
		t.Fatalf("progress event = %+v", p)
	}

	// A node event has no namespace in its reference, and "default" as its own.
	b.Eventf(&v1.ObjectReference{Kind: "Node", Name: "node1", UID: "node1"}, v1.EventTypeWarning, "SystemOOM", "oom")
	got = await(t, r, func(ev []v1.Event) bool { return len(ev) == 3 })
	if got[2].Namespace != "default" || got[2].InvolvedObject.Kind != "Node" {
		t.Fatalf("node event = %+v", got[2])
	}
}

func TestRingAnswersAsTheAPIServer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	r := NewRing(RingConfig{Clock: clk})
	e := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "default"}, Message: "m", Count: 1,
		FirstTimestamp: metav1.NewTime(clk.Now()), LastTimestamp: metav1.NewTime(clk.Now())}
	if _, err := r.Create(e); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(e); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	gone := e.DeepCopy()
	gone.Name = "p.2"
	if _, err := r.Patch(gone, []byte(`{"count":2}`)); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of an event not kept: %v, want NotFound (the broadcaster then creates it)", err)
	}
	if _, err := r.Patch(e, []byte(`not json`)); !apierrors.IsBadRequest(err) {
		t.Fatalf("patch that is not JSON: %v, want BadRequest", err)
	}
	later := metav1.NewTime(clk.Now().Add(time.Minute))
	patch := fmt.Sprintf(`{"count":3,"lastTimestamp":%q,"message":"m2"}`, later.UTC().Format(time.RFC3339))
	out, err := r.Patch(e, []byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 3 || out.Message != "m2" || !out.LastTimestamp.Equal(&later) || out.Name != "p.1" {
		t.Fatalf("patched = %+v", out)
	}
	if got := r.List(); len(got) != 1 || got[0].Count != 3 {
		t.Fatalf("kept = %+v", got)
	}
}

func TestRingIsBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	r := NewRing(RingConfig{Clock: clk, Size: 3, TTL: time.Minute})
	for i := range 5 {
		ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p.%d", i), Namespace: "default"},
			Message: fmt.Sprintf("message %d", i), LastTimestamp: metav1.NewTime(clk.Now())}
		if _, err := r.Create(ev); err != nil {
			t.Fatal(err)
		}
	}
	got := r.List()
	if len(got) != 3 || got[0].Message != "message 2" || got[2].Message != "message 4" {
		t.Fatalf("kept %v, want the newest three", got)
	}
	clk.Step(2 * time.Minute)
	if _, err := r.Create(&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p.fresh", Namespace: "default"},
		Message: "fresh", LastTimestamp: metav1.NewTime(clk.Now())}); err != nil {
		t.Fatal(err)
	}
	if got = r.List(); len(got) != 1 || got[0].Message != "fresh" {
		t.Fatalf("kept %v, want only the event younger than the TTL", got)
	}
}
