package pullprogress

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/events"
)

// update is one event the reporter recorded.
type update struct {
	reason, message, note string
}

type recorder struct{ ch chan update }

func (r recorder) Eventf(_ runtime.Object, _, reason, format string, args ...any) {
	r.ch <- update{reason: reason, message: fmt.Sprintf(format, args...)}
}

func (r recorder) AnnotatedEventf(_ runtime.Object, a map[string]string, _, reason, format string, args ...any) {
	r.ch <- update{reason: reason, message: fmt.Sprintf(format, args...), note: a[events.ProgressAnnotation]}
}

// source answers each sample with the next of its results.
type source struct {
	mu      sync.Mutex
	image   string
	since   time.Time
	results []result
	calls   int
}

type result struct {
	p   Progress
	err error
}

func (s *source) Sampler(image string, since time.Time) Sampler {
	s.mu.Lock()
	s.image, s.since = image, since
	s.mu.Unlock()
	return func(context.Context) (Progress, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		r := s.results[s.calls]
		s.calls++
		return r.p, r.err
	}
}

func (s *source) sampled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

const mib = 1 << 20

var pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}

func newReporter(src *source) (*Reporter, *testingclock.FakeClock, chan update) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	ch := make(chan update, 10)
	return New(Config{Source: src, Recorder: recorder{ch}, Clock: clk}), clk, ch
}

func next(t *testing.T, ch chan update) update {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no update")
		return update{}
	}
}

func TestReporterUpdatesThePullingEvent(t *testing.T) {
	src := &source{results: []result{
		{err: ErrNotYet},
		{p: Progress{Total: 40 * mib, Done: 10 * mib, Fetched: 10 * mib}},
		{p: Progress{Total: 40 * mib, Done: 30 * mib, Fetched: 30 * mib}},
	}}
	r, clk, ch := newReporter(src)
	start := clk.Now()
	stop := r.Watch(pod, "big:1", `Pulling image "big:1"`)
	if src.image != "big:1" || !src.since.Equal(start) {
		t.Errorf("sampler for %q since %v, want big:1 since %v", src.image, src.since, start)
	}
	// 10 s: the manifest has not arrived; nothing is sent.
	clk.Step(10 * time.Second)
	waitFor(t, "the reporter to re-arm its timer", func() bool { return src.sampled() == 1 && clk.HasWaiters() })
	clk.Step(10 * time.Second)
	got := next(t, ch)
	want := update{reason: events.Pulling, message: `Pulling image "big:1"`, note: "10.0 MiB of 40.0 MiB (25%), 512.0 KiB/s"}
	if got != want {
		t.Errorf("first update %+v, want %+v", got, want)
	}
	clk.Step(10 * time.Second)
	got = next(t, ch)
	want.note = "30.0 MiB of 40.0 MiB (75%), 2.0 MiB/s"
	if got != want {
		t.Errorf("second update %+v, want %+v", got, want)
	}
	stop()
	clk.Step(time.Minute)
	select {
	case u := <-ch:
		t.Errorf("update after stop: %+v", u)
	default:
	}
	if n := src.sampled(); n != 3 {
		t.Errorf("%d samples, want 3", n)
	}
}

func TestReporterQuickPullSendsNothing(t *testing.T) {
	src := &source{}
	r, clk, ch := newReporter(src)
	stop := r.Watch(pod, "small:1", `Pulling image "small:1"`)
	clk.Step(9 * time.Second)
	stop()
	clk.Step(time.Minute)
	if n := src.sampled(); n != 0 || len(ch) != 0 {
		t.Errorf("%d samples and %d updates for a pull shorter than the interval", n, len(ch))
	}
}

func TestReporterGivesUpWhenTheRuntimeCannotTell(t *testing.T) {
	src := &source{results: []result{{err: fmt.Errorf("%w: Unimplemented", ErrUnsupported)}}}
	r, clk, ch := newReporter(src)
	stop := r.Watch(pod, "big:1", `Pulling image "big:1"`)
	defer stop()
	clk.Step(10 * time.Second)
	waitFor(t, "the reporter to stop its timer", func() bool { return src.sampled() == 1 && !clk.HasWaiters() })
	clk.Step(time.Minute)
	if n := src.sampled(); n != 1 || len(ch) != 0 {
		t.Errorf("%d samples and %d updates, want one sample and none", n, len(ch))
	}
}

// waitFor waits until the reporter's goroutine reached a state the test
// can see (its timer armed or stopped).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
