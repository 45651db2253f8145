package shutdown

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// fakeLogind is logind as the manager sees it.
type fakeLogind struct {
	mu sync.Mutex
	// delay is InhibitDelayMaxUSec; reload sets it to afterReload.
	delay, afterReload time.Duration
	overridden         time.Duration
	reloaded           bool
	held, taken        int
	signals            chan bool
}

type fakeLock struct{ l *fakeLogind }

func (f fakeLock) Release() error {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	f.l.held--
	return nil
}

func (l *fakeLogind) InhibitDelayMax() (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay, nil
}
func (l *fakeLogind) Inhibit() (Lock, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held++
	l.taken++
	return fakeLock{l}, nil
}
func (l *fakeLogind) PrepareForShutdown() (<-chan bool, error) { return l.signals, nil }
func (l *fakeLogind) OverrideInhibitDelay(d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.overridden = d
	return nil
}
func (l *fakeLogind) ReloadConf() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reloaded, l.delay = true, l.afterReload
	return nil
}
func (l *fakeLogind) Close() error { return nil }
func (l *fakeLogind) locks() (held, taken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.taken
}

// killed is one TerminatePod call.
type killed struct {
	name   string
	grace  int64
	at     time.Time
	status v1.PodStatus
}

// fakeKiller records kills; a pod named in hang never terminates.
type fakeKiller struct {
	clock *testingclock.FakeClock
	kills chan killed
	hang  map[string]bool
}

func (k *fakeKiller) TerminatePod(ctx context.Context, pod *v1.Pod, grace int64, status func(v1.PodStatus) v1.PodStatus) error {
	k.kills <- killed{name: pod.Name, grace: grace, at: k.clock.Now(), status: status(pod.Status)}
	if k.hang[pod.Name] {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(_ runtime.Object, eventtype, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(format, args...))
}

func makePod(name string, priority int32, grace *int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 3},
		Spec: v1.PodSpec{Priority: &priority, TerminationGracePeriodSeconds: grace}, Status: v1.PodStatus{Phase: v1.PodRunning}}
}

type env struct {
	clock   *testingclock.FakeClock
	logind  *fakeLogind
	killer  *fakeKiller
	rec     *recorder
	m       *Manager
	changed chan struct{}
	dir     string
	start   prometheus.Gauge
	end     prometheus.Gauge
}

func newEnv(t *testing.T, cfg *kubeletconfig.KubeletConfiguration, delay, afterReload time.Duration, pods []*v1.Pod, hang ...string) *env {
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	e := &env{
		clock:   clk,
		logind:  &fakeLogind{delay: delay, afterReload: afterReload, signals: make(chan bool)},
		killer:  &fakeKiller{clock: clk, kills: make(chan killed, 16), hang: map[string]bool{}},
		rec:     &recorder{},
		changed: make(chan struct{}, 4),
		dir:     t.TempDir(),
		start:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "start"}),
		end:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "end"}),
	}
	for _, h := range hang {
		e.killer.hang[h] = true
	}
	e.m = New(Config{
		Periods: Periods(cfg), Connect: func() (Logind, error) { return e.logind, nil }, Clock: clk,
		ActivePods: func() []*v1.Pod { return pods }, Killer: e.killer, Recorder: e.rec,
		NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"}, Changed: func() { e.changed <- struct{}{} },
		StateDir: e.dir, StartTime: e.start, EndTime: e.end,
	})
	return e
}

func config(total, critical time.Duration) *kubeletconfig.KubeletConfiguration {
	return &kubeletconfig.KubeletConfiguration{ShutdownGracePeriod: metav1.Duration{Duration: total}, ShutdownGracePeriodCriticalPods: metav1.Duration{Duration: critical}}
}

// stepUntil steps the fake clock (when something waits on it) until done.
func stepUntil(clk *testingclock.FakeClock, step time.Duration, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		if clk.HasWaiters() {
			clk.Step(step)
		}
		time.Sleep(time.Millisecond)
	}
}

// Upstream's TestManager cases: the grace period each pod gets, the
// statuses, and the InhibitDelayMaxSec override.
func TestManagerAsUpstream(t *testing.T) {
	normal := makePod("normal-pod-nil-grace-period", 0, nil)
	critical := makePod("critical-pod-nil-grace-period", podutil.SystemCriticalPriority, nil)
	normalShort := makePod("normal-pod-grace-period", 0, ptr.To[int64](2))
	criticalShort := makePod("critical-pod-grace-period", podutil.SystemCriticalPriority, ptr.To[int64](2))
	normalLong := makePod("normal-pod-long-grace-period", 0, ptr.To[int64](1000))
	succeeded := makePod("succeeded-pod", 0, nil)
	succeeded.Status.Phase = v1.PodSucceeded
	for _, tc := range []struct {
		desc               string
		pods               []*v1.Pod
		total, critical    time.Duration
		delay, afterReload time.Duration
		wantOverride       bool
		wantGrace          map[string]int64
		wantErr            string
	}{
		{desc: "no override (total=30s, critical=10s)", pods: []*v1.Pod{normal, critical}, total: 30 * time.Second, critical: 10 * time.Second,
			delay: 40 * time.Second, wantGrace: map[string]int64{normal.Name: 20, critical.Name: 10}},
		{desc: "pods with terminationGracePeriod and without", pods: []*v1.Pod{normal, critical, normalShort, criticalShort},
			total: 30 * time.Second, critical: 10 * time.Second, delay: 40 * time.Second,
			wantGrace: map[string]int64{normal.Name: 20, critical.Name: 10, normalShort.Name: 2, criticalShort.Name: 2}},
		{desc: "a long terminationGracePeriod is overridden", pods: []*v1.Pod{normal, critical, normalLong},
			total: 30 * time.Second, critical: 10 * time.Second, delay: 40 * time.Second,
			wantGrace: map[string]int64{normal.Name: 20, critical.Name: 10, normalLong.Name: 20}},
		{desc: "no override (total=30, critical=0)", pods: []*v1.Pod{normal, critical}, total: 30 * time.Second, delay: 40 * time.Second,
			wantGrace: map[string]int64{normal.Name: 30, critical.Name: 0}},
		{desc: "override successful", pods: []*v1.Pod{normal, critical}, total: 30 * time.Second, critical: 10 * time.Second,
			delay: 5 * time.Second, afterReload: 30 * time.Second, wantOverride: true, wantGrace: map[string]int64{normal.Name: 20, critical.Name: 10}},
		{desc: "override unsuccessful", pods: []*v1.Pod{normal, critical}, total: 30 * time.Second, critical: 10 * time.Second,
			delay: 5 * time.Second, afterReload: 5 * time.Second, wantOverride: true,
			wantErr: "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 30s (ShutdownGracePeriod), current value is 5s"},
		{desc: "override unsuccessful, zero time", pods: []*v1.Pod{normal, critical}, total: 5 * time.Second, critical: 5 * time.Second,
			wantOverride: true, wantErr: "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 5s (ShutdownGracePeriod), current value is 0s"},
		{desc: "no override, all time to critical pods", pods: []*v1.Pod{normal, critical}, total: 5 * time.Second, critical: 5 * time.Second,
			delay: 5 * time.Second, wantGrace: map[string]int64{normal.Name: 0, critical.Name: 5}},
		{desc: "a succeeded pod keeps its phase", pods: []*v1.Pod{succeeded}, total: 30 * time.Second, delay: 40 * time.Second,
			wantGrace: map[string]int64{succeeded.Name: 30}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e := newEnv(t, config(tc.total, tc.critical), tc.delay, tc.afterReload, tc.pods)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			var err error
			go func() { _, err = e.m.start(ctx); close(started) }()
			stepUntil(e.clock, time.Second, started)
			if e.logind.reloaded != tc.wantOverride || (tc.wantOverride && e.logind.overridden != tc.total) {
				t.Errorf("override: reloaded %v overridden %v, want %v", e.logind.reloaded, e.logind.overridden, tc.wantOverride)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("start: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if held, _ := e.logind.locks(); held != 1 || e.m.ShutdownStatus() != nil {
				t.Fatalf("after start: %d locks held, status %v", held, e.m.ShutdownStatus())
			}
			if ok, _, _ := e.m.Admit(tc.pods[0]); !ok {
				t.Fatal("a pod was rejected before any shutdown")
			}
			e.logind.signals <- true
			got := map[string]int64{}
			for range tc.pods {
				k := <-e.killer.kills
				got[k.name] = k.grace
				wantPhase := v1.PodFailed
				if k.name == succeeded.Name {
					wantPhase = v1.PodSucceeded
				}
				s := k.status
				if s.Phase != wantPhase || s.Reason != "Terminated" || s.Message != "Pod was terminated in response to imminent node shutdown." ||
					len(s.Conditions) != 1 || s.Conditions[0].Type != v1.DisruptionTarget || s.Conditions[0].Status != v1.ConditionTrue ||
					s.Conditions[0].Reason != "TerminationByKubelet" || s.Conditions[0].Message != s.Message || s.Conditions[0].ObservedGeneration != 3 {
					t.Errorf("%s: status %+v", k.name, s)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantGrace) {
				t.Errorf("grace periods %v, want %v", got, tc.wantGrace)
			}
			if err := e.m.ShutdownStatus(); err == nil || err.Error() != "node is shutting down" {
				t.Errorf("ShutdownStatus = %v", err)
			}
			if ok, reason, msg := e.m.Admit(tc.pods[0]); ok || reason != "NodeShutdown" || msg != "Pod was rejected as the node is shutting down." {
				t.Errorf("Admit during shutdown = %v %q %q", ok, reason, msg)
			}
			waitReleased(t, e.logind)
		})
	}
}

// The shutdown, step by step on a fake clock: regular pods first, the
// critical ones only once the regular ones stopped or their period ran
// out; the lock is released at the end (logind goes on); the state file,
// the metrics, the events and the node status follow; a cancelled
// shutdown takes the lock again and the node is no longer shutting down.
func TestShutdownOrderTimingAndCancel(t *testing.T) {
	regular := makePod("regular", 0, nil)
	stuck := makePod("stuck", 1000, nil) // a user priority, in the regular group
	critical := makePod("critical", podutil.SystemCriticalPriority, ptr.To[int64](3))
	e := newEnv(t, config(20*time.Second, 5*time.Second), time.Minute, 0, []*v1.Pod{critical, regular, stuck}, "stuck")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := e.m.start(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := e.clock.Now()
	e.logind.signals <- true
	<-e.changed
	first := map[string]killed{}
	for range 2 {
		k := <-e.killer.kills
		first[k.name] = k
	}
	if first["regular"].grace != 15 || first["stuck"].grace != 15 || !first["regular"].at.Equal(t0) {
		t.Fatalf("first group %+v, want regular and stuck at once with 15 s", first)
	}
	select {
	case k := <-e.killer.kills:
		t.Fatalf("%s killed while the regular group still has time", k.name)
	default:
	}
	// "stuck" never stops: the critical group starts when the regular
	// group's 15 s are over, not before.
	for !e.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	e.clock.Step(14 * time.Second)
	select {
	case k := <-e.killer.kills:
		t.Fatalf("%s killed after 14 s", k.name)
	case <-time.After(50 * time.Millisecond):
	}
	e.clock.Step(time.Second)
	k := <-e.killer.kills
	if k.name != "critical" || k.grace != 3 || k.at.Sub(t0) != 15*time.Second {
		t.Fatalf("second kill %+v, want critical with its own 3 s at 15 s", k)
	}
	// The critical pod stops at once: the lock goes, the state is stored.
	waitReleased(t, e.logind)
	data, err := os.ReadFile(filepath.Join(e.dir, "graceful_node_shutdown_state"))
	if err != nil {
		t.Fatal(err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil || !st.StartTime.Equal(t0) || st.EndTime.Sub(t0) != 15*time.Second {
		t.Errorf("state %s (%v)", data, err)
	}
	if testutil.ToFloat64(e.start) != float64(t0.Unix()) || testutil.ToFloat64(e.end) != float64(t0.Add(15*time.Second).Unix()) {
		t.Errorf("metrics start %v end %v", testutil.ToFloat64(e.start), testutil.ToFloat64(e.end))
	}

	// Cancelled: the lock is taken again and the node is back.
	e.logind.signals <- false
	<-e.changed
	for e.m.ShutdownStatus() != nil {
		time.Sleep(time.Millisecond)
	}
	for {
		if held, taken := e.logind.locks(); held == 1 && taken == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	want := "Normal NodeShutdown Shutdown manager detected shutdown event,Normal NodeShutdown Shutdown manager detected shutdown cancellation"
	if got := strings.Join(e.rec.events, ","); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// waitReleased waits until the shutdown released the inhibitor lock (its
// processing is over).
func waitReleased(t *testing.T, l *fakeLogind) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if held, _ := l.locks(); held == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the inhibitor lock was not released after the last group")
		}
		time.Sleep(time.Millisecond)
	}
}

// After a restart (a reboot) the gauges come back from the state file.
func TestMetricsFromState(t *testing.T) {
	e := newEnv(t, config(10*time.Second, 0), time.Minute, 0, nil)
	data := `{"startTime":"2026-11-25T10:00:00Z","endTime":"2026-11-25T10:00:20Z"}`
	if err := os.WriteFile(filepath.Join(e.dir, "graceful_node_shutdown_state"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	e.m.loadMetrics()
	start, _ := time.Parse(time.RFC3339, "2026-11-25T10:00:00Z")
	if testutil.ToFloat64(e.start) != float64(start.Unix()) || testutil.ToFloat64(e.end) != float64(start.Unix()+20) {
		t.Errorf("metrics %v %v", testutil.ToFloat64(e.start), testutil.ToFloat64(e.end))
	}
}
