package podsync

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
)

// fakeProbes is the prober as a sync sees it: canned results, and a record
// of what the sync told it.
type fakeProbes struct {
	mu      sync.Mutex
	results map[string]prober.Result // "container/type"
	unready map[string]bool
	// notStarted are containers whose startup probe has not succeeded.
	notStarted map[string]bool
	grace      int64
	added      []*v1.Pod
	removed    []types.UID
	started    []string // "container id"
	stopped    []string
}

func (f *fakeProbes) AddPod(pod *v1.Pod) { f.added = append(f.added, pod) }
func (f *fakeProbes) RemovePod(uid types.UID) {
	f.removed = append(f.removed, uid)
}
func (f *fakeProbes) ContainerStarted(_ *v1.Pod, name, id string, _ time.Time, _ prober.Prior) {
	f.started = append(f.started, name+" "+id)
}
func (f *fakeProbes) ContainerStopped(_ types.UID, name string) { f.stopped = append(f.stopped, name) }
func (f *fakeProbes) Result(_ types.UID, c string, t prober.ProbeType) prober.Result {
	return f.results[c+"/"+t.String()]
}
func (f *fakeProbes) Ready(_ types.UID, c string) bool            { return !f.unready[c] }
func (f *fakeProbes) Started(_ types.UID, c string) bool          { return !f.notStarted[c] }
func (f *fakeProbes) LivenessGracePeriod(types.UID, string) int64 { return f.grace }

type fakeMirrors struct {
	err     error
	ensured []string
}

func (f *fakeMirrors) Ensure(_ context.Context, p *v1.Pod) error {
	f.ensured = append(f.ensured, p.Name)
	return f.err
}

// env is a Syncer over a real runtime manager on the fake CRI.
type env struct {
	t      *testing.T
	ctx    context.Context
	clk    *testingclock.FakeClock
	cri    *critest.Server
	rt     *kuberuntime.Manager
	status *statusmanager.Manager
	rec    *record.FakeRecorder
	s      *Syncer
}

func newEnv(t *testing.T, mutate func(*Config)) *env {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cri := critest.New(t, clk)
	rec := record.NewFakeRecorder(1000)
	dir := t.TempDir()
	rt := kuberuntime.NewManager(kuberuntime.Config{
		Runtime: cri.RuntimeClient, Clock: clk, Recorder: rec,
		Images: kuberuntime.NewImagePuller(kuberuntime.ImageConfig{Images: cri.ImageClient, Clock: clk, Recorder: rec}),
		Spec:   criconfig.Options{PodLogsDir: filepath.Join(dir, "logs")}, PodsDir: filepath.Join(dir, "pods"),
	})
	cri.Images.SetFakeImages([]string{"busybox"})
	status := statusmanager.NewManager(nil)
	cfg := Config{Runtime: rt, Status: status, Clock: clk, HostIPs: []string{"10.0.0.1"}, RuntimeName: "containerd",
		MaxDeadPerContainer: 1, Recorder: rec}
	if mutate != nil {
		mutate(&cfg)
	}
	return &env{t: t, ctx: context.Background(), clk: clk, cri: cri, rt: rt, status: status, rec: rec, s: New(cfg)}
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func (e *env) published(pod *v1.Pod) v1.PodStatus {
	e.t.Helper()
	ps, ok := e.status.Get(pod.UID)
	if !ok {
		e.t.Fatalf("no status published for %s", pod.Name)
	}
	return ps
}

func sandboxID(pod *v1.Pod, attempt uint32) string {
	return critest.SandboxID(pod.Name, pod.Namespace, string(pod.UID), attempt)
}

func containerID(pod *v1.Pod, name string, attempt uint32) string {
	return critest.ContainerID(sandboxID(pod, 0), name, attempt)
}

func newPod(names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	p.Spec.DNSPolicy = v1.DNSDefault
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return p
}

// containerState summarises a published container status as
// "running", "waiting <reason>" or "terminated <exit code>", with
// " ready" when ready.
func containerState(cs v1.ContainerStatus) string {
	s := "unknown"
	switch {
	case cs.State.Running != nil:
		s = "running"
	case cs.State.Waiting != nil:
		s = "waiting " + cs.State.Waiting.Reason
	case cs.State.Terminated != nil:
		s = "terminated " + cs.State.Terminated.Reason
	}
	if cs.Ready {
		s += " ready"
	}
	return s
}

func states(ps v1.PodStatus) map[string]string {
	out := map[string]string{}
	for _, cs := range ps.ContainerStatuses {
		out[cs.Name] = containerState(cs)
	}
	return out
}

// TestSyncPod drives a pod sync end to end on the fake CRI: the status
// published after the sync shows what the sync did (the invariant of this
// package), and the outcome tells the worker whether the pod is done and
// when to come back.
func TestSyncPod(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name   string
		pod    func() *v1.Pod
		mutate func(*Config)
		setup  func(e *env, pod *v1.Pod)
		// want
		outcome podworkers.Outcome
		err     string
		phase   v1.PodPhase
		reason  string
		states  map[string]string
		check   func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus)
	}{
		{
			name:   "a new pod: started, and published Running at once",
			pod:    func() *v1.Pod { return newPod("app") },
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				if ps.PodIP != "192.168.192.168" || ps.HostIP != "10.0.0.1" || ps.ContainerStatuses[0].ContainerID != "containerd://"+containerID(pod, "app", 0) {
					t.Errorf("pod IP %s host IP %s container ID %s", ps.PodIP, ps.HostIP, ps.ContainerStatuses[0].ContainerID)
				}
			},
		},
		{
			name: "every container succeeded (restartPolicy Never): Succeeded, the worker stops it",
			pod: func() *v1.Pod {
				p := newPod("app")
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				return p
			},
			setup: func(e *env, pod *v1.Pod) {
				e.s.SyncPod(e.ctx, pod)
				e.clk.Step(time.Second)
				e.cri.ExitContainer(containerID(pod, "app", 0), 0)
			},
			outcome: podworkers.Outcome{Terminal: true},
			phase:   v1.PodSucceeded,
			states:  map[string]string{"app": "terminated Completed"},
		},
		{
			name: "activeDeadlineSeconds: requeued for when it passes",
			pod: func() *v1.Pod {
				p := newPod("app")
				p.Spec.ActiveDeadlineSeconds = int64p(10)
				return p
			},
			outcome: podworkers.Outcome{RequeueAfter: 10 * time.Second},
			phase:   v1.PodRunning,
			states:  map[string]string{"app": "running ready"},
		},
		{
			name: "activeDeadlineSeconds passed: Failed DeadlineExceeded, as upstream",
			pod: func() *v1.Pod {
				p := newPod("app")
				p.Spec.ActiveDeadlineSeconds = int64p(10)
				return p
			},
			setup: func(e *env, pod *v1.Pod) {
				e.s.SyncPod(e.ctx, pod)
				e.clk.Step(10 * time.Second)
				e.events()
			},
			outcome: podworkers.Outcome{Terminal: true},
			phase:   v1.PodFailed,
			reason:  "DeadlineExceeded",
			states:  map[string]string{"app": "running ready"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				if ps.Message != "Pod was active on the node longer than the specified deadline" {
					t.Errorf("message %q", ps.Message)
				}
				if evs := e.events(); !reflect.DeepEqual(evs, []string{"Normal DeadlineExceeded Pod was active on the node longer than the specified deadline"}) {
					t.Errorf("events %q", evs)
				}
			},
		},
		{
			name:   "a container that cannot be created: published with its waiting reason",
			pod:    func() *v1.Pod { return newPod("app") },
			setup:  func(e *env, pod *v1.Pod) { e.cri.Runtime.InjectError("CreateContainer", boom) },
			err:    "CreateContainerError",
			phase:  v1.PodPending,
			states: map[string]string{"app": "waiting CreateContainerError"},
		},
		{
			name: "a crash-looping container: CrashLoopBackOff, requeued when the back-off ends",
			pod:  func() *v1.Pod { return newPod("app") },
			setup: func(e *env, pod *v1.Pod) {
				e.s.SyncPod(e.ctx, pod)
				e.clk.Step(time.Second)
				e.cri.ExitContainer(containerID(pod, "app", 0), 1)
				e.s.SyncPod(e.ctx, pod) // restarted at once
				e.clk.Step(time.Second)
				e.cri.ExitContainer(containerID(pod, "app", 1), 1)
			},
			outcome: podworkers.Outcome{RequeueAfter: 10 * time.Second},
			err:     "CrashLoopBackOff",
			phase:   v1.PodRunning,
			states:  map[string]string{"app": "waiting CrashLoopBackOff"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				if w := ps.ContainerStatuses[0].State.Waiting; !strings.HasPrefix(w.Message, "back-off 10s restarting failed container=app pod=web_ns(uid-1)") {
					t.Errorf("waiting message %q", w.Message)
				}
				if ps.ContainerStatuses[0].RestartCount != 1 || ps.ContainerStatuses[0].LastTerminationState.Terminated == nil {
					t.Errorf("restart count %d, last termination %+v", ps.ContainerStatuses[0].RestartCount, ps.ContainerStatuses[0].LastTerminationState)
				}
			},
		},
		{
			name:    "a mirror pod that cannot be written: the sync goes on and is retried in 2s",
			pod:     func() *v1.Pod { return newPod("app") },
			mutate:  func(c *Config) { c.Mirrors = &fakeMirrors{err: boom} },
			outcome: podworkers.Outcome{RequeueAfter: mirrorRetry},
			phase:   v1.PodRunning,
			states:  map[string]string{"app": "running ready"},
		},
		{
			name: "a failed liveness probe: the container is killed with the probe's grace period and restarted",
			pod:  func() *v1.Pod { return newPod("app", "side") },
			mutate: func(c *Config) {
				c.Probes = &fakeProbes{results: map[string]prober.Result{"app/Liveness": prober.Failure}, grace: 5}
			},
			setup: func(e *env, pod *v1.Pod) {
				e.s.cfg.Probes.(*fakeProbes).results = nil // healthy while it starts
				e.s.SyncPod(e.ctx, pod)
				e.s.cfg.Probes.(*fakeProbes).results = map[string]prober.Result{"app/Liveness": prober.Failure}
				e.cri.Stops()
				e.events()
			},
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready", "side": "running ready"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				stops := e.cri.Stops()
				if len(stops) != 1 || stops[0].ID != containerID(pod, "app", 0) || stops[0].Timeout != 5 {
					t.Errorf("stops %+v, want app's first instance with 5s", stops)
				}
				if ps.ContainerStatuses[0].RestartCount != 1 {
					t.Errorf("restart count %d, want 1", ps.ContainerStatuses[0].RestartCount)
				}
				evs := e.events()
				if len(evs) == 0 || evs[0] != "Normal Killing Container app failed liveness probe, will be restarted" {
					t.Errorf("events %q", evs)
				}
			},
		},
		{
			name: "a failed startup probe: killed and restarted, named in the event",
			pod:  func() *v1.Pod { return newPod("app") },
			mutate: func(c *Config) {
				c.Probes = &fakeProbes{grace: 30}
			},
			setup: func(e *env, pod *v1.Pod) {
				e.s.SyncPod(e.ctx, pod)
				e.s.cfg.Probes.(*fakeProbes).results = map[string]prober.Result{"app/Startup": prober.Failure, "app/Liveness": prober.Failure}
				e.events()
			},
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				if evs := e.events(); len(evs) == 0 || evs[0] != "Normal Killing Container app failed startup probe, will be restarted" {
					t.Errorf("events %q", evs)
				}
			},
		},
		{
			name: "readiness comes from the prober; probes learn the pod IP and each running instance",
			pod: func() *v1.Pod {
				p := addSidecar(newPod("app", "side"), "proxy")
				return p
			},
			mutate: func(c *Config) { c.Probes = &fakeProbes{unready: map[string]bool{"side": true}} },
			setup: func(e *env, pod *v1.Pod) {
				e.s.SyncPod(e.ctx, pod) // the sidecar starts first
			},
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready", "side": "running"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				probes := e.s.cfg.Probes.(*fakeProbes)
				last := probes.added[len(probes.added)-1]
				if last.Status.PodIP != "192.168.192.168" || len(last.Status.PodIPs) != 1 {
					t.Errorf("probes got pod IP %q %v", last.Status.PodIP, last.Status.PodIPs)
				}
				want := []string{"proxy " + containerID(pod, "proxy", 0), "app " + containerID(pod, "app", 0), "side " + containerID(pod, "side", 0)}
				got := probes.started[len(probes.started)-3:]
				if !reflect.DeepEqual(got, want) {
					t.Errorf("probes told %v, want %v", got, want)
				}
				for _, c := range ps.Conditions {
					if c.Type == v1.ContainersReady && c.Status != v1.ConditionFalse {
						t.Errorf("ContainersReady %s with an unready container", c.Status)
					}
				}
			},
		},
		{
			name: "a host-network pod's probes go to the node's IP",
			pod: func() *v1.Pod {
				p := newPod("app")
				p.Spec.HostNetwork = true
				return p
			},
			mutate: func(c *Config) { c.Probes = &fakeProbes{} },
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				probes := e.s.cfg.Probes.(*fakeProbes)
				if ip := probes.added[len(probes.added)-1].Status.PodIP; ip != "10.0.0.1" {
					t.Errorf("probes got pod IP %q, want the node's", ip)
				}
			},
		},
		{
			name: "a container that exited is reported stopped to the prober",
			pod: func() *v1.Pod {
				p := newPod("app", "job")
				p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
				return p
			},
			mutate: func(c *Config) { c.Probes = &fakeProbes{} },
			setup: func(e *env, pod *v1.Pod) {
				e.s.SyncPod(e.ctx, pod)
				e.clk.Step(time.Second)
				e.cri.ExitContainer(containerID(pod, "job", 0), 0)
			},
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready", "job": "terminated Completed"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				if stopped := e.s.cfg.Probes.(*fakeProbes).stopped; len(stopped) == 0 || stopped[0] != "job" {
					t.Errorf("stopped %v, want job", stopped)
				}
			},
		},
		{
			name: "dead instances are pruned down to MaxDeadPerContainer when a new one starts",
			pod:  func() *v1.Pod { return newPod("app") },
			setup: func(e *env, pod *v1.Pod) {
				for attempt := uint32(0); attempt < 3; attempt++ {
					e.s.SyncPod(e.ctx, pod)
					e.clk.Step(time.Minute)
					e.cri.ExitContainer(containerID(pod, "app", attempt), 1)
					e.clk.Step(5 * time.Minute)
				}
			},
			phase:  v1.PodRunning,
			states: map[string]string{"app": "running ready"},
			check: func(t *testing.T, e *env, pod *v1.Pod, ps v1.PodStatus) {
				st, _ := e.rt.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
				var ids []string
				for _, c := range st.Containers {
					ids = append(ids, c.ID)
				}
				if want := []string{containerID(pod, "app", 3), containerID(pod, "app", 2)}; !reflect.DeepEqual(ids, want) {
					t.Errorf("instances %v, want %v", ids, want)
				}
			},
		},
		{
			name:  "the runtime cannot be read: an error, nothing published",
			pod:   func() *v1.Pod { return newPod("app") },
			setup: func(e *env, pod *v1.Pod) { e.cri.Runtime.InjectError("ListPodSandbox", boom) },
			err:   "get runtime status of pod ns/web",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.mutate)
			pod := tc.pod()
			if tc.setup != nil {
				tc.setup(e, pod)
			}
			out, err := e.s.SyncPod(e.ctx, pod)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("SyncPod: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("SyncPod error %v, want one containing %q", err, tc.err)
			}
			if out != tc.outcome {
				t.Errorf("outcome %+v, want %+v", out, tc.outcome)
			}
			if tc.phase == "" {
				if _, ok := e.status.Get(pod.UID); ok {
					t.Errorf("a status was published")
				}
				return
			}
			ps := e.published(pod)
			if ps.Phase != tc.phase || ps.Reason != tc.reason {
				t.Errorf("phase %s reason %q, want %s %q", ps.Phase, ps.Reason, tc.phase, tc.reason)
			}
			if got := states(ps); !reflect.DeepEqual(got, tc.states) {
				t.Errorf("containers %v, want %v", got, tc.states)
			}
			if tc.check != nil {
				tc.check(t, e, pod, ps)
			}
		})
	}
}

func int64p(v int64) *int64 { return &v }

func addSidecar(p *v1.Pod, name string) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: name, Image: "busybox", RestartPolicy: &always})
	return p
}

// A start failure shows until the container starts; then the status is
// clean again.
func TestSyncPodClearsFailuresOnStart(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("app")
	e.cri.Runtime.InjectError("StartContainer", errors.New("no such file"))
	if _, err := e.s.SyncPod(e.ctx, pod); err == nil {
		t.Fatal("no error for a container that did not start")
	}
	if got := states(e.published(pod)); got["app"] != "waiting RunContainerError" {
		t.Fatalf("after the failure: %v", got)
	}
	e.clk.Step(time.Second)
	if _, err := e.s.SyncPod(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := states(e.published(pod)); got["app"] != "running ready" {
		t.Fatalf("after the start: %v", got)
	}
}

// SyncTerminatingPod stops the pod within the grace period given and
// publishes its final status; the prober forgets it first.
func TestSyncTerminatingPod(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name  string
		setup func(e *env)
		grace *int64
		err   string
		// wantStops are the stop timeouts given (one container).
		wantStops []int64
	}{
		{name: "stopped within the pod's grace period", wantStops: []int64{30}},
		{name: "stopped within the grace period given (deletion, eviction)", grace: int64p(4), wantStops: []int64{4}},
		{name: "the runtime cannot be read", setup: func(e *env) { e.cri.Runtime.InjectError("ListPodSandbox", boom) },
			err: "get runtime status of pod ns/web"},
		{name: "a container cannot be stopped", setup: func(e *env) { e.cri.Runtime.InjectError("StopContainer", boom) },
			err: "kill pod ns/web", wantStops: []int64{30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probes := &fakeProbes{}
			e := newEnv(t, func(c *Config) { c.Probes = probes })
			pod := newPod("app")
			e.s.SyncPod(e.ctx, pod)
			e.cri.Stops()
			if tc.setup != nil {
				tc.setup(e)
			}
			err := e.s.SyncTerminatingPod(e.ctx, pod, tc.grace)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			var timeouts []int64
			for _, s := range e.cri.Stops() {
				timeouts = append(timeouts, s.Timeout)
			}
			if !reflect.DeepEqual(timeouts, tc.wantStops) {
				t.Errorf("stop timeouts %v, want %v", timeouts, tc.wantStops)
			}
			if !reflect.DeepEqual(probes.removed, []types.UID{pod.UID}) {
				t.Errorf("prober forgot %v, want the pod", probes.removed)
			}
			if tc.err != "" {
				return
			}
			ps := e.published(pod)
			if ps.Phase != v1.PodSucceeded && ps.Phase != v1.PodFailed {
				t.Errorf("phase %s after termination, want a terminal one", ps.Phase)
			}
			if sb, _ := e.cri.SandboxState(sandboxID(pod, 0)); sb != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Errorf("sandbox %v", sb)
			}
		})
	}
}

// SyncTerminatedPod removes a deleted pod from the runtime and forgets it;
// a pod only stopped (not removed) is left as it is.
func TestSyncTerminatedPod(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("app")
	e.cri.Runtime.InjectError("CreateContainer", errors.New("boom"))
	e.s.SyncPod(e.ctx, pod) // leaves a start failure behind
	if err := e.s.SyncTerminatingPod(e.ctx, pod, nil); err != nil {
		t.Fatal(err)
	}

	if err := e.s.SyncTerminatedPod(e.ctx, pod, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.status.Get(pod.UID); !ok {
		t.Fatal("a pod not removed lost its status")
	}

	e.cri.Runtime.InjectError("RemovePodSandbox", errors.New("busy"))
	if err := e.s.SyncTerminatedPod(e.ctx, pod, true); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("error %v, want the removal's", err)
	}
	if err := e.s.SyncTerminatedPod(e.ctx, pod, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.status.Get(pod.UID); ok {
		t.Fatal("status kept for a removed pod")
	}
	if pods, _ := e.rt.GetPods(e.ctx, true); len(pods) != 0 {
		t.Fatalf("left on the runtime: %+v", pods)
	}
	// The same UID again (a static pod re-added) starts clean.
	e.s.SyncPod(e.ctx, pod)
	if got := states(e.published(pod)); got["app"] != "running ready" {
		t.Fatalf("re-added pod: %v", got)
	}

	e.cri.Runtime.InjectError("ListPodSandbox", errors.New("down"))
	if err := e.s.SyncTerminatedPod(e.ctx, pod, true); err == nil || !strings.Contains(err.Error(), "get runtime status") {
		t.Fatalf("error %v, want the status error", err)
	}
}

// A container the runtime already runs when the kubelet starts (a restart)
// is ready in the first status the kubelet publishes, not after the next
// periodic sync.
func TestSyncPodAfterRestartPublishesRunningContainerReady(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("main")
	if _, err := e.s.SyncPod(e.ctx, pod); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if got := states(e.published(pod)); got["main"] != "running ready" {
		t.Fatalf("before the restart: %v", got)
	}

	// A new kubelet: fresh status manager and prober, the same runtime.
	status := statusmanager.NewManager(nil)
	probes := prober.New(prober.Config{Runtime: e.cri.RuntimeClient, Clock: e.clk})
	restarted := New(Config{Runtime: e.rt, Status: status, Clock: e.clk, HostIPs: []string{"10.0.0.1"}, RuntimeName: "containerd",
		MaxDeadPerContainer: 1, Recorder: e.rec, Probes: probes})
	if _, err := restarted.SyncPod(e.ctx, pod); err != nil {
		t.Fatalf("sync after the restart: %v", err)
	}
	ps, ok := status.Get(pod.UID)
	if !ok {
		t.Fatal("no status after the restart")
	}
	if got := states(ps); got["main"] != "running ready" {
		t.Fatalf("after the restart: %v, want the running container ready at once", got)
	}
}
