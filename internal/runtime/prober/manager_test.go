package prober

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

func TestObserve(t *testing.T) {
	tests := []struct {
		name     string
		seq      []Result
		succ     int32
		fail     int32
		wantFlip []bool
	}{
		{name: "defaults need 3 failures", seq: []Result{Failure, Failure, Failure}, wantFlip: []bool{false, false, true}},
		{name: "success threshold 1", seq: []Result{Success}, wantFlip: []bool{true}},
		{name: "success threshold 2 reset by failure", seq: []Result{Success, Failure, Success, Success}, succ: 2, fail: 5, wantFlip: []bool{false, false, false, true}},
		{name: "failure threshold 2", seq: []Result{Failure, Success, Failure, Failure}, fail: 2, wantFlip: []bool{false, true, false, true}},
		{name: "unknown never flips", seq: []Result{Unknown, Unknown}, wantFlip: []bool{false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s thresholdState
			for i, r := range tc.seq {
				var flip bool
				s, flip = observe(s, r, tc.succ, tc.fail)
				if flip != tc.wantFlip[i] {
					t.Fatalf("step %d: flip=%v want %v", i, flip, tc.wantFlip[i])
				}
			}
		})
	}
}

func TestNextRun(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{name: "on time", now: base, want: base.Add(10 * time.Second)},
		{name: "slightly late", now: base.Add(3 * time.Second), want: base.Add(10 * time.Second)},
		{name: "missed slots skipped", now: base.Add(25 * time.Second), want: base.Add(30 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextRun(base, 10*time.Second, tc.now); !got.Equal(tc.want) {
				t.Errorf("got %v want %v", got, tc.want)
			}
		})
	}
}

// scriptRuntime returns exit codes per command from a script; the last code repeats.
type scriptRuntime struct {
	mu     sync.Mutex
	script map[string][]int32
	calls  map[string]int
}

func newScript(s map[string][]int32) *scriptRuntime {
	return &scriptRuntime{script: s, calls: map[string]int{}}
}

func (s *scriptRuntime) ExecSync(_ context.Context, in *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := in.Cmd[0]
	codes := s.script[cmd]
	i := s.calls[cmd]
	s.calls[cmd]++
	if i >= len(codes) {
		i = len(codes) - 1
	}
	return &runtimeapi.ExecSyncResponse{ExitCode: codes[i], Stdout: []byte(fmt.Sprintf("%s#%d", cmd, i))}, nil
}

func (s *scriptRuntime) count(cmd string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[cmd]
}

// updateLog collects what the manager sent on Updates so far (a send
// completes before the call that caused it returns).
type updateLog struct {
	mu      sync.Mutex
	src     <-chan Update
	updates []Update
}

func (l *updateLog) get() []Update {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		select {
		case u := <-l.src:
			l.updates = append(l.updates, u)
		default:
			return append([]Update(nil), l.updates...)
		}
	}
}

type fakeRecorder struct {
	mu      sync.Mutex
	reasons []string
}

func (r *fakeRecorder) Eventf(_ runtime.Object, _, reason, _ string, _ ...any) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason)
	r.mu.Unlock()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func execProbeSpec(cmd string, delay, period, succ, fail int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}},
		InitialDelaySeconds: delay, PeriodSeconds: period, SuccessThreshold: succ, FailureThreshold: fail, TimeoutSeconds: 1,
	}
}

func testPod(c v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	p.UID, p.Name, p.Namespace = types.UID("uid-1"), "p", "ns"
	p.Status.PodIP = "127.0.0.1"
	return p
}

type harness struct {
	clk *testingclock.FakeClock
	rt  *scriptRuntime
	log *updateLog
	rec *fakeRecorder
	m   *Manager
	// metrics is the set the manager records into.
	metrics *metrics.Metrics
}

func newHarness(t *testing.T, script map[string][]int32) *harness {
	h := &harness{clk: testingclock.NewFakeClock(time.Unix(10000, 0)), rt: newScript(script), log: &updateLog{}, rec: &fakeRecorder{}, metrics: metrics.New()}
	h.m = New(Config{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, Metrics: h.metrics})
	h.log.src = h.m.Updates()
	t.Cleanup(h.m.Stop)
	return h
}

// step advances the fake clock once the expected number of workers sleep.
func (h *harness) step(t *testing.T, waiters int, d time.Duration) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d waiters", waiters), func() bool { return h.clk.Waiters() >= waiters })
	h.clk.Step(d)
}

func TestLivenessInitialDelayAndFailureThreshold(t *testing.T) {
	h := newHarness(t, map[string][]int32{"live": {0, 1, 1}})
	pod := testPod(v1.Container{Name: "c", LivenessProbe: execProbeSpec("live", 5, 2, 1, 2)})
	h.m.AddPod(pod)
	if got := h.m.Result(pod.UID, "c", Liveness); got != Success {
		t.Fatalf("initial liveness = %v, want success", got)
	}
	h.m.ContainerStarted(pod, "c", "cid-1", h.clk.Now(), Prior{})
	h.step(t, 1, 4*time.Second)
	if n := h.rt.count("live"); n != 0 {
		t.Fatalf("probed %d times before initial delay", n)
	}
	h.step(t, 1, time.Second) // t=5: success
	waitFor(t, "first probe", func() bool { return h.rt.count("live") == 1 })
	h.step(t, 1, 2*time.Second) // t=7: failure 1 of 2
	waitFor(t, "second probe", func() bool { return h.rt.count("live") == 2 })
	if got := h.m.Result(pod.UID, "c", Liveness); got != Success {
		t.Fatalf("after one failure liveness = %v, want success", got)
	}
	h.step(t, 1, 2*time.Second) // t=9: failure 2 of 2 -> Failure
	waitFor(t, "liveness failure", func() bool { return h.m.Result(pod.UID, "c", Liveness) == Failure })
	h.m.Wait() // worker holds (exits) after a liveness failure
	if n := h.rt.count("live"); n != 3 {
		t.Fatalf("probe count = %d, want 3", n)
	}
	want := []Update{{PodUID: pod.UID, ContainerName: "c", ContainerID: "cid-1", Type: Liveness, Result: Failure}}
	if got := h.log.get(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates = %v, want %v", got, want)
	}
	if g := h.m.LivenessGracePeriod(pod.UID, "c"); g != 30 {
		t.Errorf("grace = %d", g)
	}
	// A new instance resets liveness to success and re-arms the worker.
	h.m.ContainerStarted(pod, "c", "cid-2", h.clk.Now(), Prior{})
	if got := h.m.Result(pod.UID, "c", Liveness); got != Success {
		t.Fatalf("after restart liveness = %v", got)
	}
	if n := len(h.log.get()); n != 2 {
		t.Fatalf("want reset update, got %v", h.log.get())
	}
	h.step(t, 1, 5*time.Second)
	waitFor(t, "probe of new instance", func() bool { return h.rt.count("live") == 4 })
}

func TestReadinessThresholdsAndUpdatesOnlyOnChange(t *testing.T) {
	// success, success (ready), success, failure (not ready), failure, success (1/2)...
	h := newHarness(t, map[string][]int32{"ready": {0, 0, 0, 1, 1, 0, 0}})
	pod := testPod(v1.Container{Name: "c", ReadinessProbe: execProbeSpec("ready", 0, 1, 2, 1)})
	h.m.AddPod(pod)
	if h.m.Ready(pod.UID, "c") {
		t.Fatal("ready before any probe")
	}
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	wantReady := []bool{false, true, true, false, false, false, true}
	for i, want := range wantReady {
		if i > 0 {
			h.step(t, 1, time.Second)
		}
		waitFor(t, fmt.Sprintf("probe %d", i+1), func() bool { return h.rt.count("ready") == i+1 && h.clk.Waiters() == 1 })
		if got := h.m.Ready(pod.UID, "c"); got != want {
			t.Fatalf("probe %d: ready=%v want %v", i+1, got, want)
		}
	}
	var results []Result
	for _, u := range h.log.get() {
		results = append(results, u.Result)
	}
	if fmt.Sprint(results) != fmt.Sprint([]Result{Success, Failure, Success}) {
		t.Fatalf("updates = %v", results)
	}
	h.rec.mu.Lock()
	nEvents := len(h.rec.reasons)
	h.rec.mu.Unlock()
	if nEvents != 2 {
		t.Errorf("want 2 Unhealthy events, got %d", nEvents)
	}
	h.m.ContainerStopped(pod.UID, "c")
	if h.m.Ready(pod.UID, "c") {
		t.Fatal("ready after container stopped")
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t, map[string][]int32{"startup": {1, 1, 0}, "live": {0}, "ready": {0}})
	pod := testPod(v1.Container{Name: "c",
		StartupProbe:   execProbeSpec("startup", 0, 1, 1, 10),
		LivenessProbe:  execProbeSpec("live", 0, 1, 1, 3),
		ReadinessProbe: execProbeSpec("ready", 0, 1, 1, 3),
	})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	for i := 1; i <= 3; i++ {
		waitFor(t, "startup probe", func() bool { return h.rt.count("startup") == i })
		if i < 3 {
			if h.m.Started(pod.UID, "c") || h.m.Ready(pod.UID, "c") {
				t.Fatalf("started/ready before startup success")
			}
			if h.rt.count("live")+h.rt.count("ready") != 0 {
				t.Fatalf("liveness/readiness probed before startup success")
			}
			h.step(t, 3, time.Second)
		}
	}
	waitFor(t, "started", func() bool { return h.m.Started(pod.UID, "c") })
	h.step(t, 2, time.Second) // startup worker has exited; two workers remain
	waitFor(t, "ready", func() bool { return h.m.Ready(pod.UID, "c") })
	waitFor(t, "liveness probed", func() bool { return h.rt.count("live") > 0 })
	if h.rt.count("startup") != 3 {
		t.Fatalf("live=%d startup=%d", h.rt.count("live"), h.rt.count("startup"))
	}
}

// Readiness with a long period is probed as soon as startup succeeds, not
// at its next slot (upstream's "ready immediately after startupProbe
// succeeds"), and then keeps its own schedule.
func TestReadinessProbedWhenStartupSucceeds(t *testing.T) {
	h := newHarness(t, map[string][]int32{"startup": {1, 0}, "ready": {0}})
	pod := testPod(v1.Container{Name: "c",
		StartupProbe:   execProbeSpec("startup", 0, 5, 1, 10),
		ReadinessProbe: execProbeSpec("ready", 0, 30, 1, 3),
	})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	waitFor(t, "first startup probe", func() bool { return h.rt.count("startup") == 1 })
	h.step(t, 2, 5*time.Second) // t=5: startup succeeds; readiness's next slot is t=30
	waitFor(t, "started", func() bool { return h.m.Started(pod.UID, "c") })
	waitFor(t, "ready without the clock moving", func() bool { return h.m.Ready(pod.UID, "c") })
	if n := h.rt.count("ready"); n != 1 {
		t.Fatalf("readiness probed %d times, want 1", n)
	}
	h.step(t, 1, 25*time.Second) // t=30: the scheduled slot
	waitFor(t, "scheduled readiness probe", func() bool { return h.rt.count("ready") == 2 })
}

func TestNoProbes(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod(v1.Container{Name: "c"})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	if !h.m.Started(pod.UID, "c") || !h.m.Ready(pod.UID, "c") || h.m.Result(pod.UID, "c", Liveness) != Unknown {
		t.Fatal("container without probes should be started and ready")
	}
}

func TestRemovePodStopsWorkers(t *testing.T) {
	h := newHarness(t, map[string][]int32{"live": {0}})
	pod := testPod(v1.Container{Name: "c", LivenessProbe: execProbeSpec("live", 0, 1, 1, 3)})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	waitFor(t, "first probe", func() bool { return h.rt.count("live") == 1 })
	h.m.RemovePod(pod.UID)
	h.m.Wait()
	h.clk.Step(10 * time.Second)
	if n := h.rt.count("live"); n != 1 {
		t.Fatalf("probed %d times after removal", n)
	}
	if h.m.Result(pod.UID, "c", Liveness) != Unknown {
		t.Fatal("result kept after removal")
	}
}

func TestLivenessGracePeriodStartupFailure(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	h := newHarness(t, map[string][]int32{"startup": {1}})
	sp := execProbeSpec("startup", 0, 1, 1, 1)
	sp.TerminationGracePeriodSeconds = i(4)
	lp := execProbeSpec("live", 0, 1, 1, 1)
	lp.TerminationGracePeriodSeconds = i(7)
	pod := testPod(v1.Container{Name: "c", StartupProbe: sp, LivenessProbe: lp})
	h.m.AddPod(pod)
	if g := h.m.LivenessGracePeriod(pod.UID, "c"); g != 7 {
		t.Fatalf("grace before startup failure = %d, want 7", g)
	}
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	waitFor(t, "startup failure", func() bool { return h.m.Result(pod.UID, "c", Startup) == Failure })
	if g := h.m.LivenessGracePeriod(pod.UID, "c"); g != 4 {
		t.Fatalf("grace after startup failure = %d, want 4", g)
	}
}

func TestSeedResult(t *testing.T) {
	tests := []struct {
		name  string
		t     ProbeType
		prior Prior
		want  Result
	}{
		{name: "readiness, nothing reported", t: Readiness, want: Failure},
		{name: "readiness reported ready", t: Readiness, prior: Prior{Ready: true}, want: Success},
		{name: "readiness reported started only", t: Readiness, prior: Prior{Started: true}, want: Failure},
		{name: "startup, nothing reported", t: Startup, want: Unknown},
		{name: "startup reported started", t: Startup, prior: Prior{Started: true}, want: Success},
		{name: "liveness is healthy whatever was reported", t: Liveness, prior: Prior{}, want: Success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SeedResult(tc.t, tc.prior); got != tc.want {
				t.Fatalf("SeedResult(%v, %+v) = %v, want %v", tc.t, tc.prior, got, tc.want)
			}
		})
	}
}

// A container that kept running across a kubelet restart starts from what
// was reported for it: ready stays ready, started stays started, before any
// probe ran (here the initial delay holds every probe back).
func TestContainerStartedFromPrior(t *testing.T) {
	h := newHarness(t, map[string][]int32{"ready": {1, 1, 1}, "start": {0}})
	pod := testPod(v1.Container{Name: "c",
		ReadinessProbe: execProbeSpec("ready", 3600, 1, 1, 3),
		StartupProbe:   execProbeSpec("start", 3600, 1, 1, 3)})
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{Ready: true, Started: true})
	if !h.m.Started(pod.UID, "c") || !h.m.Ready(pod.UID, "c") {
		t.Fatalf("started=%v ready=%v, want both true from the prior", h.m.Started(pod.UID, "c"), h.m.Ready(pod.UID, "c"))
	}
	if n := h.rt.count("ready") + h.rt.count("start"); n != 0 {
		t.Fatalf("%d probes ran", n)
	}
	// A new instance of the container is not ready until it passes.
	h.m.ContainerStarted(pod, "c", "cid-2", h.clk.Now(), Prior{})
	if h.m.Ready(pod.UID, "c") || h.m.Started(pod.UID, "c") {
		t.Fatal("a new instance inherited the old one's readiness")
	}
}

// The prior can arrive after the prober first saw the instance (a static
// pod whose mirror pod the API source delivers late): until a probe settles
// a verdict it raises the seed; after, the probe's verdict stands.
func TestLatePriorRaisesAnUnsettledSeedOnly(t *testing.T) {
	h := newHarness(t, map[string][]int32{"ready": {1}})
	pod := testPod(v1.Container{Name: "c", ReadinessProbe: execProbeSpec("ready", 0, 1, 1, 1)})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now().Add(time.Hour), Prior{}) // probes after an hour
	if h.m.Ready(pod.UID, "c") {
		t.Fatal("ready without a prior")
	}
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now().Add(time.Hour), Prior{Ready: true})
	if !h.m.Ready(pod.UID, "c") {
		t.Fatal("a late prior did not raise an unsettled seed")
	}
	want := []Update{{PodUID: pod.UID, ContainerName: "c", ContainerID: "cid", Type: Readiness, Result: Success}}
	if got := h.log.get(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates = %v, want %v", got, want)
	}
	h.step(t, 1, time.Hour) // the probe fails: a verdict (failureThreshold 1)
	waitFor(t, "readiness failure", func() bool { return !h.m.Ready(pod.UID, "c") })
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{Ready: true})
	if h.m.Ready(pod.UID, "c") {
		t.Fatal("a prior overrode a probe's verdict")
	}
}
