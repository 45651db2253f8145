package events

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestRingRecordsUpstreamShapedEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 5))
	r := NewRing(RingConfig{NodeName: "node1", Clock: clk, Scheme: testScheme(t)})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", UID: "u1"}}
	r.Eventf(pod, v1.EventTypeNormal, Started, "Started container %s", "main")
	select {
	case <-r.Changed():
	default:
		t.Fatal("no change poked")
	}
	got := r.List()
	if len(got) != 1 {
		t.Fatalf("events = %v", got)
	}
	e := got[0]
	wantName := fmt.Sprintf("web-node1.%x", clk.Now().UnixNano())
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web-node1", Namespace: "default", UID: "u1"}
	if e.Name != wantName || e.Namespace != "default" || e.InvolvedObject != want || e.Reason != "Started" ||
		e.Message != "Started container main" || e.Count != 1 || e.Type != v1.EventTypeNormal ||
		e.Source != (v1.EventSource{Component: "kubelet", Host: "node1"}) || e.ReportingController != "kubelet" || e.ReportingInstance != "node1" ||
		!e.FirstTimestamp.Equal(&e.LastTimestamp) || e.FirstTimestamp.Time != clk.Now() {
		t.Fatalf("event = %+v", e)
	}

	// The same event again: one event, counted.
	clk.Step(time.Second)
	r.Eventf(pod, v1.EventTypeNormal, Started, "Started container %s", "main")
	got = r.List()
	if len(got) != 1 || got[0].Count != 2 || got[0].Name != wantName || !got[0].LastTimestamp.Time.Equal(clk.Now()) || got[0].ResourceVersion == e.ResourceVersion {
		t.Fatalf("repeated event = %+v", got)
	}

	// A node event has no namespace in its reference, and "default" as its own.
	r.Eventf(&v1.ObjectReference{Kind: "Node", Name: "node1", UID: "node1"}, v1.EventTypeWarning, "SystemOOM", "oom")
	if got = r.List(); len(got) != 2 || got[1].Namespace != "default" || got[1].InvolvedObject.Kind != "Node" {
		t.Fatalf("node event = %+v", got)
	}
}

func TestRingIsBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	r := NewRing(RingConfig{NodeName: "n", Clock: clk, Size: 3, TTL: time.Minute, Scheme: testScheme(t)})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	for i := range 5 {
		r.Eventf(pod, v1.EventTypeNormal, "R", "message %d", i)
	}
	got := r.List()
	if len(got) != 3 || got[0].Message != "message 2" || got[2].Message != "message 4" {
		t.Fatalf("kept %v, want the newest three", got)
	}
	clk.Step(2 * time.Minute)
	r.Eventf(pod, v1.EventTypeNormal, "R", "fresh")
	if got = r.List(); len(got) != 1 || got[0].Message != "fresh" {
		t.Fatalf("kept %v, want only the event younger than the TTL", got)
	}
}

// testScheme knows the core/v1 kinds the kubelet's events are about.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
