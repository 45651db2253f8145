package events

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// call is one request the fake sink got.
type call struct {
	verb  string // create or patch
	event *v1.Event
	patch string
}

// fakeSink reports every call on calls and answers with reply.
type fakeSink struct {
	calls chan call
	reply func(c call) (*v1.Event, error)
}

var _ Sink = (*fakeSink)(nil)

func (s *fakeSink) do(c call) (*v1.Event, error) {
	s.calls <- c
	if s.reply != nil {
		return s.reply(c)
	}
	return c.event.DeepCopy(), nil
}

func (s *fakeSink) Create(e *v1.Event) (*v1.Event, error) {
	return s.do(call{verb: "create", event: e.DeepCopy()})
}

func (s *fakeSink) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	return s.do(call{verb: "patch", event: e.DeepCopy(), patch: string(data)})
}

func newTestBroadcaster(sink *fakeSink, queue int) (*Broadcaster, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(epoch)
	b := NewBroadcaster(BroadcasterConfig{
		Sink: sink, Scheme: kubeclient.Scheme, Clock: clk, QueueLength: queue,
		Source: v1.EventSource{Component: "kubelet", Host: "node-a"},
		Jitter: func() float64 { return 0.5 },
	})
	return b, clk
}

// start runs b until the test ends or cancel is called; done closes when
// Run has returned.
func start(t *testing.T, b *Broadcaster) (cancel context.CancelFunc, done chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "u1"}}
}

// waitForSleep returns once the broadcaster waits on the clock.
func waitForSleep(clk *testingclock.FakeClock) {
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
}

func TestBroadcasterCreatesThenPatchesRepeats(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	b, clk := newTestBroadcaster(sink, 0)
	start(t, b)

	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "Pulling image %q", "nginx")
	c := <-sink.calls
	e := c.event
	if c.verb != "create" || e.Name != fmt.Sprintf("web.%x", epoch.UnixNano()) || e.Namespace != "team" || e.Count != 1 ||
		e.InvolvedObject != (v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "team", Name: "web", UID: "u1"}) ||
		e.Reason != Pulling || e.Message != `Pulling image "nginx"` || e.Type != v1.EventTypeNormal ||
		e.Source != (v1.EventSource{Component: "kubelet", Host: "node-a"}) || e.ReportingController != "kubelet" || e.ReportingInstance != "node-a" ||
		!e.FirstTimestamp.Time.Equal(epoch) || !e.LastTimestamp.Time.Equal(epoch) {
		t.Fatalf("first write %s %+v", c.verb, e)
	}
	clk.Step(time.Minute)
	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "Pulling image %q", "nginx")
	c = <-sink.calls
	want := fmt.Sprintf(`{"count":2,"lastTimestamp":%q,"message":"Pulling image \"nginx\""}`, epoch.Add(time.Minute).Format(time.RFC3339))
	if c.verb != "patch" || c.event.Name != e.Name || c.patch != want {
		t.Fatalf("repeat: %s %s %s, want a patch of %s with %s", c.verb, c.event.Name, c.patch, e.Name, want)
	}
}

func TestBroadcasterRecreatesAnEventTheAPILost(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	sink.reply = func(c call) (*v1.Event, error) {
		if c.verb == "patch" {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, c.event.Name)
		}
		e := c.event.DeepCopy()
		e.ResourceVersion = "7"
		return e, nil
	}
	b, _ := newTestBroadcaster(sink, 0)
	start(t, b)
	b.Eventf(testPod(), v1.EventTypeWarning, BackOff, "Back-off")
	<-sink.calls
	b.Eventf(testPod(), v1.EventTypeWarning, BackOff, "Back-off")
	if c := <-sink.calls; c.verb != "patch" || c.event.ResourceVersion != "7" {
		t.Fatalf("repeat: %s rv %q", c.verb, c.event.ResourceVersion)
	}
	if c := <-sink.calls; c.verb != "create" || c.event.Count != 2 || c.event.ResourceVersion != "" {
		t.Fatalf("after NotFound: %s count %d rv %q, want a create of count 2", c.verb, c.event.Count, c.event.ResourceVersion)
	}
}

func TestBroadcasterRetriesTransientErrors(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 20)}
	sink.reply = func(c call) (*v1.Event, error) {
		if c.event.Reason == Pulling {
			return nil, errors.New("connection refused")
		}
		return c.event, nil
	}
	b, clk := newTestBroadcaster(sink, 0)
	start(t, b)
	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "m")
	for try := 1; try <= MaxTries; try++ {
		if c := <-sink.calls; c.verb != "create" {
			t.Fatalf("try %d: %s", try, c.verb)
		}
		if try == MaxTries {
			break
		}
		waitForSleep(clk)
		// The first retry waits the jittered half of 10 s, later ones 10 s.
		sleep := DefaultRetrySleep
		if try == 1 {
			sleep = DefaultRetrySleep / 2
		}
		clk.Step(sleep - time.Millisecond)
		select {
		case c := <-sink.calls:
			t.Fatalf("try %d came %v early: %s", try+1, time.Millisecond, c.verb)
		default:
		}
		clk.Step(time.Millisecond)
	}
	// Given up: the next event is written at once.
	b.Eventf(testPod(), v1.EventTypeNormal, Pulled, "m")
	if c := <-sink.calls; c.event.Reason != Pulled {
		t.Fatalf("after giving up: %+v", c.event)
	}
	if clk.HasWaiters() {
		t.Error("still sleeping after the 12th try")
	}
}

func TestBroadcasterDoesNotRetryRejectedEvents(t *testing.T) {
	for _, err := range []error{
		apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", errors.New("no")),
		apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "e"),
	} {
		t.Run(string(apierrors.ReasonForError(err)), func(t *testing.T) {
			sink := &fakeSink{calls: make(chan call, 10)}
			sink.reply = func(c call) (*v1.Event, error) {
				if c.event.Reason == Pulling {
					return nil, err
				}
				return c.event, nil
			}
			b, clk := newTestBroadcaster(sink, 0)
			start(t, b)
			b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "m")
			<-sink.calls
			b.Eventf(testPod(), v1.EventTypeNormal, Pulled, "m")
			if c := <-sink.calls; c.event.Reason != Pulled {
				t.Fatalf("rejected event written again: %+v", c.event)
			}
			if clk.HasWaiters() {
				t.Error("sleeping after a rejection")
			}
		})
	}
}

func TestBroadcasterNeverBlocksTheCaller(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	b, _ := newTestBroadcaster(sink, 2) // Run is not started: nothing drains the queue
	for i := 0; i < 5; i++ {
		b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "m %d", i)
	}
	if len(b.queue) != 2 {
		t.Fatalf("queued %d, want the queue's 2", len(b.queue))
	}
}

func TestBroadcasterStopsWithItsContext(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	sink.reply = func(call) (*v1.Event, error) { return nil, errors.New("timeout") }
	b, clk := newTestBroadcaster(sink, 0)
	cancel, done := start(t, b)
	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "m")
	<-sink.calls
	waitForSleep(clk)
	cancel() // during the retry sleep
	<-done
	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "after") // dropped, not blocked
	select {
	case c := <-sink.calls:
		t.Fatalf("written after shutdown: %+v", c.event)
	default:
	}
}

func TestBroadcasterEventReferences(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	b, _ := newTestBroadcaster(sink, 0)
	start(t, b)
	// Node events use a reference whose UID is the node name (upstream's
	// nodeRef); cluster-scoped objects' events go to the default namespace.
	node := &v1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"}
	b.Eventf(node, v1.EventTypeNormal, StartingKubelet, "Starting kubelet.")
	if c := <-sink.calls; c.event.Namespace != "default" || c.event.InvolvedObject != *node || !strings.HasPrefix(c.event.Name, "node-a.") {
		t.Fatalf("node event %+v", c.event)
	}
	b.Eventf(testPod(), "Bogus", Pulling, "m") // not Normal or Warning: dropped
	b.Eventf(testPod(), v1.EventTypeWarning, Failed, "boom")
	if c := <-sink.calls; c.event.Reason != Failed {
		t.Fatalf("got %+v", c.event)
	}
}

// The eviction manager's Evicted event carries starved_resource.
func TestBroadcasterAnnotatedEvent(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	b, _ := newTestBroadcaster(sink, 0)
	start(t, b)
	var r Recorder = b
	r.(AnnotatedRecorder).AnnotatedEventf(testPod(), map[string]string{"starved_resource": "memory"}, v1.EventTypeWarning, "Evicted", "The node was low on resource: %s.", "memory")
	c := <-sink.calls
	if c.event.Annotations["starved_resource"] != "memory" || c.event.Message != "The node was low on resource: memory." || c.event.Reason != "Evicted" {
		t.Fatalf("annotated event %+v", c.event)
	}
}

// Forget runs in queue order: an event queued before it is written (and
// correlated) first, so the pod's entries are gone afterwards and its next
// event is created anew, not patched.
func TestBroadcasterForgetsAfterTheQueuedEvents(t *testing.T) {
	sink := &fakeSink{calls: make(chan call, 10)}
	b, _ := newTestBroadcaster(sink, 0)
	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "Pulling image %q", "nginx")
	b.Forget("u1")
	start(t, b)
	if c := <-sink.calls; c.verb != "create" {
		t.Fatalf("first write %s, want create", c.verb)
	}
	b.Eventf(testPod(), v1.EventTypeNormal, Pulling, "Pulling image %q", "nginx")
	if c := <-sink.calls; c.verb != "create" || c.event.Count != 1 {
		t.Fatalf("after Forget: %s with count %d, want a new event", c.verb, c.event.Count)
	}
}
