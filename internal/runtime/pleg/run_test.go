package pleg

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// waitClock is a fake clock that reports each wait (After) it is asked
// for, so a test knows a goroutine is waiting, and for how long, before it
// steps the clock.
type waitClock struct {
	*testingclock.FakeClock
	waits chan time.Duration
}

func newWaitClock() *waitClock {
	return &waitClock{FakeClock: testingclock.NewFakeClock(time.Unix(1000, 0)), waits: make(chan time.Duration, 100)}
}

func (c *waitClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.waits <- d
	return ch
}

// chanLister answers GetPods with what the test gives it, one answer per
// call, so each relist is a step the test takes.
type chanLister struct {
	answers chan listAnswer
}

type listAnswer struct {
	pods []*kuberuntime.RunningPod
	err  error
}

func (l *chanLister) GetPods(context.Context, bool) ([]*kuberuntime.RunningPod, error) {
	a := <-l.answers
	return a.pods, a.err
}

func runningPod(uid string, containers ...string) []*kuberuntime.RunningPod {
	p := &kuberuntime.RunningPod{UID: types.UID("pod-" + uid), Sandboxes: []kuberuntime.SandboxStatus{{ID: "sb", Ready: true}}}
	for _, c := range containers {
		p.Containers = append(p.Containers, &kuberuntime.ContainerStatus{ID: c, State: kuberuntime.StateRunning})
	}
	return []*kuberuntime.RunningPod{p}
}

func expectEvent(t *testing.T, p *PLEG, want Event) {
	t.Helper()
	if got := <-p.Events(); got != want {
		t.Fatalf("event %+v, want %+v", got, want)
	}
}

func expectNoEvent(t *testing.T, p *PLEG) {
	t.Helper()
	select {
	case e := <-p.Events():
		t.Fatalf("unexpected event %+v", e)
	default:
	}
}

// Run relists at once and then every RelistPeriod, emitting what changed,
// until its context ends.
func TestRunRelistsEveryPeriod(t *testing.T) {
	clk := newWaitClock()
	l := &chanLister{answers: make(chan listAnswer)}
	p := New(Config{Lister: l, Clock: clk, RelistPeriod: time.Second, StreamRelistPeriod: 5 * time.Minute, RelistThreshold: 3 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()

	l.answers <- listAnswer{pods: runningPod("a", "c1")}
	expectEvent(t, p, Event{ID: "pod-a", Type: ContainerStarted, Data: "c1", Source: "relist"})
	if d := <-clk.waits; d != time.Second {
		t.Fatalf("waits %v after a relist, want the relist period 1s", d)
	}
	clk.Step(time.Second)
	l.answers <- listAnswer{pods: runningPod("a", "c1", "c2")}
	expectEvent(t, p, Event{ID: "pod-a", Type: ContainerStarted, Data: "c2", Source: "relist"})
	if d := <-clk.waits; d != time.Second {
		t.Fatalf("waits %v, want 1s", d)
	}
	cancel()
	<-done
}

// A relist that fails emits nothing and does not count as activity: when
// relisting keeps failing past the threshold the PLEG is unhealthy, as
// upstream's Healthy.
func TestRelistFailureMakesPLEGUnhealthy(t *testing.T) {
	clk := newWaitClock()
	l := &chanLister{answers: make(chan listAnswer, 1)}
	p := New(Config{Lister: l, Clock: clk, RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute})
	if ok, err := p.Healthy(); !ok {
		t.Fatalf("unhealthy before the first relist: %v", err)
	}
	l.answers <- listAnswer{pods: runningPod("a", "c1")}
	p.Relist(context.Background())
	expectEvent(t, p, Event{ID: "pod-a", Type: ContainerStarted, Data: "c1", Source: "relist"})

	clk.Step(2 * time.Minute)
	l.answers <- listAnswer{err: errors.New("runtime down")}
	p.Relist(context.Background())
	expectNoEvent(t, p)
	if ok, err := p.Healthy(); !ok {
		t.Fatalf("unhealthy 2m after the last relist: %v", err)
	}
	clk.Step(time.Minute + time.Second)
	l.answers <- listAnswer{err: errors.New("runtime down")}
	p.Relist(context.Background())
	ok, err := p.Healthy()
	if want := "pleg was last seen active 3m1s ago; threshold is 3m0s"; ok || err == nil || err.Error() != want {
		t.Fatalf("Healthy = %v, %v; want false, %q", ok, err, want)
	}
	// The runtime is back: the next relist restores health and emits only
	// what changed meanwhile.
	l.answers <- listAnswer{pods: runningPod("a")}
	p.Relist(context.Background())
	expectEvent(t, p, Event{ID: "pod-a", Type: ContainerRemoved, Data: "c1", Source: "relist"})
	if ok, err := p.Healthy(); !ok {
		t.Fatalf("unhealthy after a good relist: %v", err)
	}
}

// A relist never blocks on a full event channel: what does not fit is
// dropped, as upstream's generic PLEG does.
func TestRelistDropsEventsWhenTheChannelIsFull(t *testing.T) {
	clk := newWaitClock()
	var ids []string
	for i := 0; i < 1001; i++ {
		ids = append(ids, fmt.Sprintf("c%04d", i))
	}
	l := &chanLister{answers: make(chan listAnswer, 1)}
	p := New(Config{Lister: l, Clock: clk, RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute})
	l.answers <- listAnswer{pods: runningPod("a", ids...)}
	p.Relist(context.Background())
	if n := len(p.Events()); n != 1000 {
		t.Fatalf("%d events queued, want the channel's 1000", n)
	}
}

func eventFor(pod *v1.Pod, id string, t runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
	return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: t, CreatedAt: 1,
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{Labels: criconfig.SandboxLabels(pod)}}
}

// The runtime's container events become PLEG events at once, by type, as
// upstream's evented PLEG maps them; events about containers the kubelet
// did not create are skipped.
func TestStreamEvents(t *testing.T) {
	clk := newWaitClock()
	cri := critest.New(t, clk)
	cri.EnableEvents()
	p := New(Config{Lister: &chanLister{}, Clock: clk, Events: cri.RuntimeClient})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.stream(ctx); close(done) }()
	<-cri.EventStreamOpened()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	cases := []struct {
		name string
		in   runtimeapi.ContainerEventType
		want EventType
	}{
		{name: "created", in: runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, want: ContainerChanged},
		{name: "started", in: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, want: ContainerStarted},
		{name: "stopped", in: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, want: ContainerDied},
		{name: "deleted", in: runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, want: ContainerRemoved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cri.SendEvent(eventFor(pod, "c-"+tc.name, tc.in))
			expectEvent(t, p, Event{ID: "uid-1", Type: tc.want, Data: "c-" + tc.name, Source: "stream"})
			if !p.isStreaming() {
				t.Fatal("not streaming after an event")
			}
		})
	}
	t.Run("a container the kubelet did not create", func(t *testing.T) {
		cri.SendEvent(eventFor(&v1.Pod{}, "alien", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT))
		cri.SendEvent(eventFor(pod, "c-after", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT))
		expectEvent(t, p, Event{ID: "uid-1", Type: ContainerStarted, Data: "c-after", Source: "stream"})
	})
	cancel()
	<-done
	if p.isStreaming() {
		t.Fatal("still streaming after the stream ended")
	}
}

// A runtime without the event stream (containerd 1.x answers
// Unimplemented) leaves the PLEG relisting: the stream is not retried.
func TestStreamUnimplementedFallsBackToRelisting(t *testing.T) {
	clk := newWaitClock()
	cri := critest.New(t, clk)
	p := New(Config{Lister: &chanLister{}, Clock: clk, Events: cri.RuntimeClient, RelistPeriod: time.Second})
	p.stream(context.Background()) // returns: nothing to follow
	if p.isStreaming() {
		t.Fatal("streaming without a stream")
	}
	select {
	case d := <-clk.waits:
		t.Fatalf("waits %v to retry a stream the runtime does not have", d)
	default:
	}
}

// A stream that breaks is reopened after 1s, 2s, 4s, ... up to about 30s
// between attempts; meanwhile the PLEG is not streaming.
func TestStreamReconnectsWithBackOff(t *testing.T) {
	clk := newWaitClock()
	cri := critest.New(t, clk)
	cri.EnableEvents()
	p := New(Config{Lister: &chanLister{}, Clock: clk, Events: cri.RuntimeClient})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.stream(ctx); close(done) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		<-cri.EventStreamOpened()
		cri.SendEvent(eventFor(pod, fmt.Sprint("c", i), runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT))
		expectEvent(t, p, Event{ID: "uid-1", Type: ContainerStarted, Data: fmt.Sprint("c", i), Source: "stream"})
		var end error = grpcstatus.Error(codes.Unavailable, "runtime restarting")
		if i%2 == 1 {
			end = nil // the runtime closed the stream cleanly
		}
		cri.EndEventStream(end)
		if d := <-clk.waits; d != want {
			t.Fatalf("break %d: reconnects after %v, want %v", i+1, d, want)
		}
		if p.isStreaming() {
			t.Fatalf("break %d: still streaming while the stream is down", i+1)
		}
		clk.Step(want)
	}
	<-cri.EventStreamOpened()
	cri.EndEventStream(grpcstatus.Error(codes.Unavailable, "gone"))
	<-clk.waits
	cancel() // while waiting to reconnect
	<-done
}

// While the event stream works, relisting slows to StreamRelistPeriod;
// it is back to RelistPeriod once the stream breaks.
func TestRunRelistsLessWhileStreaming(t *testing.T) {
	clk := newWaitClock()
	cri := critest.New(t, clk)
	cri.EnableEvents()
	l := &chanLister{answers: make(chan listAnswer)}
	p := New(Config{Lister: l, Clock: clk, Events: cri.RuntimeClient, RelistPeriod: time.Second, StreamRelistPeriod: 5 * time.Minute, RelistThreshold: 10 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()

	l.answers <- listAnswer{}
	first := <-clk.waits // the relist period, or the stream period if the stream won the race
	<-cri.EventStreamOpened()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	cri.SendEvent(eventFor(pod, "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT))
	expectEvent(t, p, Event{ID: "uid-1", Type: ContainerStarted, Data: "c1", Source: "stream"})

	clk.Step(first)
	l.answers <- listAnswer{}
	if d := <-clk.waits; d != 5*time.Minute {
		t.Fatalf("relists every %v while streaming, want 5m", d)
	}
	cri.EndEventStream(grpcstatus.Error(codes.Unavailable, "restart"))
	if d := <-clk.waits; d != time.Second {
		t.Fatalf("the stream reconnects after %v, want 1s", d)
	}
	clk.Step(5 * time.Minute) // the relist is due; the reconnect too
	l.answers <- listAnswer{}
	<-cri.EventStreamOpened() // reconnected, no event yet: not streaming
	if d := <-clk.waits; d != time.Second {
		t.Fatalf("relists every %v once the stream broke, want 1s", d)
	}
	cancel()
	<-done
}
