package podsync

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
)

func TestBaseline(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	stored := v1.PodStatus{StartTime: &t1, Message: "stored"}
	api := v1.PodStatus{StartTime: &t0, Message: "api"}
	tests := []struct {
		name       string
		stored     *statusmanager.Stored
		api        *v1.PodStatus
		object     types.UID
		want       string
		wantObject types.UID
	}{
		{name: "standalone, first sync: nothing", want: ""},
		{name: "standalone: the stored status", stored: &statusmanager.Stored{Status: stored}, want: "stored"},
		{name: "after a restart: what the API holds", api: &api, object: "pod", want: "api", wantObject: "pod"},
		{name: "stored on the same object: the stored status", stored: &statusmanager.Stored{Status: stored, Basis: "pod"}, api: &api, object: "pod", want: "stored", wantObject: "pod"},
		{name: "static pod, mirror pod not known yet: the stored status, built on nothing",
			stored: &statusmanager.Stored{Status: stored, Basis: ""}, want: "stored", wantObject: ""},
		{name: "static pod, its mirror pod just arrived: the mirror pod's status",
			stored: &statusmanager.Stored{Status: stored, Basis: ""}, api: &api, object: "mirror", want: "api", wantObject: "mirror"},
		{name: "static pod, a mirror pod just created (empty status): the stored status",
			stored: &statusmanager.Stored{Status: stored, Basis: "old-mirror"}, api: &v1.PodStatus{}, object: "mirror", want: "stored", wantObject: "mirror"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s statusmanager.Stored
			if tc.stored != nil {
				s = *tc.stored
			}
			var a v1.PodStatus
			if tc.api != nil {
				a = *tc.api
			}
			got, obj := Baseline(s, tc.stored != nil, a, tc.object, tc.api != nil)
			if got.Message != tc.want || obj != tc.wantObject {
				t.Fatalf("Baseline = %q on %q, want %q on %q", got.Message, obj, tc.want, tc.wantObject)
			}
		})
	}
}

func TestPriorOf(t *testing.T) {
	yes := true
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	base := v1.PodStatus{
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://a1", Ready: true, Started: &yes, State: running},
			{Name: "slow", ContainerID: "containerd://s1", Started: &yes, State: running},
			{Name: "gone", ContainerID: "containerd://g1", Ready: true, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
		},
		InitContainerStatuses: []v1.ContainerStatus{{Name: "proxy", ContainerID: "containerd://p1", Ready: true, Started: &yes, State: running}},
	}
	tests := []struct {
		name, container, id string
		want                prober.Prior
	}{
		{name: "the same instance, reported ready", container: "app", id: "a1", want: prober.Prior{Ready: true, Started: true}},
		{name: "another instance of it", container: "app", id: "a2", want: prober.Prior{}},
		{name: "started, not ready", container: "slow", id: "s1", want: prober.Prior{Started: true}},
		{name: "reported terminated", container: "gone", id: "g1", want: prober.Prior{}},
		{name: "a sidecar", container: "proxy", id: "p1", want: prober.Prior{Ready: true, Started: true}},
		{name: "never reported", container: "new", id: "n1", want: prober.Prior{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PriorOf(base, tc.container, tc.id); got != tc.want {
				t.Fatalf("PriorOf(%s %s) = %+v, want %+v", tc.container, tc.id, got, tc.want)
			}
		})
	}
}

// reported stands in for what the API server holds.
type reported struct {
	status v1.PodStatus
	object types.UID
	ok     bool
}

func (r *reported) get(*v1.Pod) (v1.PodStatus, types.UID, bool) { return r.status, r.object, r.ok }

func condition(ps v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range ps.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

// readinessProbed is a pod with a container without probes and one whose
// readiness probe cannot run during the test (initial delay of an hour).
func readinessProbed() *v1.Pod {
	pod := newPod("plain", "probed")
	pod.Spec.Containers[1].ReadinessProbe = &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 3600, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
	return pod
}

// restart is a kubelet restart over the same runtime: a fresh Syncer with a
// real prober and an empty status store, what the API holds in api.
func (e *env) restart(t *testing.T, api *reported) *Syncer {
	t.Helper()
	probes := prober.New(prober.Config{Clock: e.clk})
	t.Cleanup(probes.Stop)
	e.status = statusmanager.NewManager(nil)
	return New(Config{Runtime: e.rt, Status: e.status, Clock: e.clk, HostIPs: []string{"10.0.0.1"}, RuntimeName: "containerd",
		MaxDeadPerContainer: 1, Recorder: e.rec, Probes: probes, Reported: api.get})
}

// TestRestartRebuildsStatusFromRuntimeAndAPI: after a kubelet restart the
// first status of a running pod says what the last one before it said:
// Ready (for a container without probes, and for one whose readiness probe
// has not run again yet), the same start time and transition times, the
// same containers; it is built on the pod's API object.
func TestRestartRebuildsStatusFromRuntimeAndAPI(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Probes = &fakeProbes{} })
	pod := readinessProbed()
	if _, err := e.s.SyncPod(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	before := e.published(pod)
	if condition(before, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatalf("before the restart: Ready %+v", condition(before, v1.PodReady))
	}
	e.clk.Step(time.Hour)
	e.cri.SandboxRuns()
	e.cri.Stops()

	s := e.restart(t, &reported{status: before, object: pod.UID, ok: true})
	if _, err := s.SyncPod(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	after, _ := e.status.Lookup(pod.UID)
	if after.Basis != pod.UID {
		t.Errorf("built on %q, want the pod %q", after.Basis, pod.UID)
	}
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady, v1.PodInitialized, v1.PodReadyToStartContainers} {
		b, a := condition(before, ct), condition(after.Status, ct)
		if a.Status != b.Status || !a.LastTransitionTime.Equal(&b.LastTransitionTime) {
			t.Errorf("%s after the restart %s since %v, before %s since %v", ct, a.Status, a.LastTransitionTime, b.Status, b.LastTransitionTime)
		}
	}
	if !after.Status.StartTime.Equal(before.StartTime) {
		t.Errorf("start time %v, was %v", after.Status.StartTime, before.StartTime)
	}
	if got, want := states(after.Status), map[string]string{"plain": "running ready", "probed": "running ready"}; len(got) != 2 || got["plain"] != want["plain"] || got["probed"] != want["probed"] {
		t.Errorf("containers %v, want %v", got, want)
	}
	for i, cs := range after.Status.ContainerStatuses {
		if cs.ContainerID != before.ContainerStatuses[i].ContainerID || cs.RestartCount != 0 {
			t.Errorf("container %s: %s restarts %d, was %s", cs.Name, cs.ContainerID, cs.RestartCount, before.ContainerStatuses[i].ContainerID)
		}
	}
	if n, stops := len(e.cri.SandboxRuns()), e.cri.Stops(); n != 0 || len(stops) != 0 {
		t.Errorf("after the restart %d sandboxes run, containers stopped: %v", n, stops)
	}
}

// A static pod can sync before the API source delivers its mirror pod. Its
// status is then built on nothing and never written; once the mirror pod is
// known the next one builds on the mirror pod's status, and the prober takes
// the readiness the mirror pod reported.
func TestRestartStaticPodBeforeItsMirrorPod(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Probes = &fakeProbes{} })
	pod := readinessProbed()
	if _, err := e.s.SyncPod(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	mirrorStatus := e.published(pod)
	e.clk.Step(time.Hour)

	api := &reported{}
	s := e.restart(t, api)
	if _, err := s.SyncPod(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	early, _ := e.status.Lookup(pod.UID)
	if early.Basis != "" {
		t.Fatalf("built on %q before the mirror pod was known", early.Basis)
	}
	api.status, api.object, api.ok = mirrorStatus, "mirror-uid", true
	if _, err := s.SyncPod(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	late, _ := e.status.Lookup(pod.UID)
	if late.Basis != "mirror-uid" {
		t.Fatalf("built on %q, want the mirror pod", late.Basis)
	}
	if c, m := condition(late.Status, v1.PodReady), condition(mirrorStatus, v1.PodReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Equal(&m.LastTransitionTime) {
		t.Errorf("Ready %s since %v, the mirror pod had %+v", c.Status, c.LastTransitionTime, condition(mirrorStatus, v1.PodReady))
	}
	if !late.Status.StartTime.Equal(mirrorStatus.StartTime) {
		t.Errorf("start time %v, the mirror pod's %v", late.Status.StartTime, mirrorStatus.StartTime)
	}
}
