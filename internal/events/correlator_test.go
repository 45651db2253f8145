package events

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func podEvent(clk *testingclock.FakeClock, pod, reason, message string) *v1.Event {
	now := metav1.NewTime(clk.Now())
	return &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod, now.UnixNano()), Namespace: "ns"},
		InvolvedObject:      v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod, UID: types.UID("uid-" + pod), APIVersion: "v1"},
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                v1.EventTypeNormal,
		Source:              v1.EventSource{Component: "kubelet", Host: "node-a"},
		ReportingController: "kubelet",
		ReportingInstance:   "node-a",
	}
}

// step is one event the test sends (after advancing the clock by wait).
type step struct {
	wait            time.Duration
	pod, reason     string
	message         string
	skip            bool
	count           int32
	aggregated      bool
	patch           bool
	sameNameAsStepN int // 1-based step whose written event this one updates; 0 none
}

// TestCorrelatorMatchesUpstream runs the same event sequences through our
// correlator and client-go's, and checks both against upstream's numbers.
func TestCorrelatorMatchesUpstream(t *testing.T) {
	repeat := func(n int) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = step{pod: "p", reason: Pulling, message: "m", count: int32(i + 1), patch: i > 0, sameNameAsStepN: min(i, 1)}
		}
		return out
	}
	distinct := func(n int, reason string) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = step{pod: "p", reason: reason, message: fmt.Sprintf("message %d", i), count: 1}
		}
		return out
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a first event is created", []step{{pod: "p", reason: Pulling, message: "m", count: 1}}},
		{"an identical event is a patch of the first", []step{
			{pod: "p", reason: Pulling, message: "m", count: 1},
			{wait: time.Second, pod: "p", reason: Pulling, message: "m", count: 2, patch: true, sameNameAsStepN: 1},
			{wait: time.Hour, pod: "p", reason: Pulling, message: "m", count: 3, patch: true, sameNameAsStepN: 1},
		}},
		{"another object is another event", []step{
			{pod: "p", reason: Pulling, message: "m", count: 1},
			{pod: "q", reason: Pulling, message: "m", count: 1},
		}},
		{"the 10th similar event within 10 minutes is aggregated, later ones patch it", append(distinct(9, BackOff),
			step{pod: "p", reason: BackOff, message: "message 9", count: 1, aggregated: true},
			step{wait: time.Minute, pod: "p", reason: BackOff, message: "message 10", count: 2, aggregated: true, patch: true, sameNameAsStepN: 10},
			step{wait: time.Minute, pod: "p", reason: BackOff, message: "message 11", count: 3, aggregated: true, patch: true, sameNameAsStepN: 10},
		)},
		{"similar events more than 10 minutes apart epoch over", append(distinct(9, BackOff),
			step{wait: 601 * time.Second, pod: "p", reason: BackOff, message: "message 9", count: 1},
		)},
		{"similar events with other reasons are not aggregated", append(distinct(9, BackOff),
			step{pod: "p", reason: Failed, message: "message 9", count: 1},
		)},
		{"a source may send 25 events about an object, then one per 5 minutes", append(append(
			repeat(25),
			step{pod: "p", reason: Pulling, message: "m", skip: true},
			step{wait: 299 * time.Second, pod: "p", reason: Pulling, message: "m", skip: true},
			// Filtered repeats still count: the next write says 28.
			step{wait: time.Second, pod: "p", reason: Pulling, message: "m", count: 28, patch: true, sameNameAsStepN: 1},
			step{pod: "p", reason: Pulling, message: "m", skip: true}),
			step{pod: "other", reason: Pulling, message: "m", count: 1}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(epoch)
			ours := NewCorrelator(clk)
			theirs := record.NewEventCorrelator(clk)
			names := map[int]string{}
			for i, s := range tc.steps {
				clk.Step(s.wait)
				e := podEvent(clk, s.pod, s.reason, s.message)
				got, err := ours.Correlate(e)
				if err != nil {
					t.Fatal(err)
				}
				want, err := theirs.EventCorrelate(e)
				if err != nil {
					t.Fatal(err)
				}
				if got.Skip != want.Skip || !apiequality.Semantic.DeepEqual(got.Event, want.Event) || string(got.Patch) != string(want.Patch) {
					t.Fatalf("step %d: ours %+v %s\nupstream's %+v %s", i+1, got.Event, got.Patch, want.Event, want.Patch)
				}
				if got.Skip != s.skip {
					t.Fatalf("step %d: skip %v, want %v", i+1, got.Skip, s.skip)
				}
				if got.Skip {
					continue
				}
				if s.count != 0 && got.Event.Count != s.count {
					t.Errorf("step %d: count %d, want %d", i+1, got.Event.Count, s.count)
				}
				if agg := strings.HasPrefix(got.Event.Message, "(combined from similar events): "); agg != s.aggregated {
					t.Errorf("step %d: message %q, aggregated %v", i+1, got.Event.Message, s.aggregated)
				} else if agg && got.Event.Message != "(combined from similar events): "+s.message {
					t.Errorf("step %d: message %q", i+1, got.Event.Message)
				}
				if (got.Patch != nil) != s.patch {
					t.Errorf("step %d: patch %s, want one: %v", i+1, got.Patch, s.patch)
				}
				if s.patch {
					wantPatch := fmt.Sprintf(`{"count":%d,"lastTimestamp":%q,"message":%q}`, got.Event.Count, clk.Now().UTC().Format(time.RFC3339), got.Event.Message)
					if string(got.Patch) != wantPatch {
						t.Errorf("step %d: patch %s, want %s", i+1, got.Patch, wantPatch)
					}
				}
				if s.sameNameAsStepN != 0 && got.Event.Name != names[s.sameNameAsStepN] {
					t.Errorf("step %d: name %q, want step %d's %q", i+1, got.Event.Name, s.sameNameAsStepN, names[s.sameNameAsStepN])
				}
				if s.sameNameAsStepN == 0 && got.Event.Name != fmt.Sprintf("%s.%x", s.pod, clk.Now().UnixNano()) {
					t.Errorf("step %d: name %q", i+1, got.Event.Name)
				}
				names[i+1] = got.Event.Name
				// The API server echoes the event with a resource version.
				written := got.Event.DeepCopy()
				written.ResourceVersion = fmt.Sprint(i + 1)
				ours.UpdateState(written)
				theirs.UpdateState(written)
			}
		})
	}
}

// Forget drops a gone pod's entries from all three caches and leaves the
// others': the forgotten pod's next event starts afresh (count 1), the
// other pod's repeat is still a patch of its event.
func TestCorrelatorForgetsAGonePod(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	c := NewCorrelator(clk)
	for _, pod := range []string{"gone", "kept"} {
		first, _ := c.Correlate(podEvent(clk, pod, "Started", "Started container app"))
		c.UpdateState(first.Event)
	}
	if n := len(c.byObject); n != 2 {
		t.Fatalf("indexed %d objects, want 2", n)
	}
	c.Forget("uid-gone")
	if _, ok := c.byObject["uid-gone"]; ok {
		t.Error("the forgotten pod is still indexed")
	}
	// kept: an event, its aggregate record and its spam bucket.
	if got := c.written.Len() + c.aggregates.Len() + c.spam.Len(); got != 3 {
		t.Errorf("%d cache entries left, want the kept pod's 3", got)
	}
	again, _ := c.Correlate(podEvent(clk, "gone", "Started", "Started container app"))
	if again.Event.Count != 1 || again.Patch != nil {
		t.Errorf("the forgotten pod's repeat: count %d, patch %q; want a new event", again.Event.Count, again.Patch)
	}
	repeat, _ := c.Correlate(podEvent(clk, "kept", "Started", "Started container app"))
	if repeat.Event.Count != 2 || repeat.Patch == nil {
		t.Errorf("the kept pod's repeat: count %d, patch %v; want a patch to count 2", repeat.Event.Count, repeat.Patch != nil)
	}
}

// The index follows the caches' evictions: it never holds more objects
// than the caches hold entries.
func TestCorrelatorIndexFollowsEvictions(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	c := NewCorrelator(clk)
	for i := range cacheEntries + 500 {
		c.Correlate(podEvent(clk, fmt.Sprintf("p%d", i), "Started", "Started container app"))
	}
	if n := len(c.byObject); n != cacheEntries {
		t.Errorf("indexed %d objects, want %d (one per cached pod)", n, cacheEntries)
	}
	if _, ok := c.byObject["uid-p0"]; ok {
		t.Error("the first pod, evicted from every cache, is still indexed")
	}
}
