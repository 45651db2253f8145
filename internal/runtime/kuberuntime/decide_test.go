package kuberuntime

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

func testPod(policy v1.RestartPolicy, names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid"}}
	p.Spec.RestartPolicy = policy
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox:1.36"})
	}
	return p
}

func withInit(p *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox:1.36"})
	}
	return p
}

func readySandbox() SandboxStatus {
	return SandboxStatus{ID: "sb1", Ready: true, IPs: []string{"10.88.0.2"}}
}

var base = time.Unix(1000, 0)

// ctr builds a container status for spec container name of pod; age orders
// instances (a higher age is older).
func ctr(p *v1.Pod, name string, state ContainerState, exit int32, age int) *ContainerStatus {
	var spec *v1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			spec = &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			spec = &p.Spec.InitContainers[i]
		}
	}
	return &ContainerStatus{ID: name + "-id-" + string(rune('a'+age)), Name: name, State: state, ExitCode: exit,
		Hash: criconfig.ContainerHash(spec), CreatedAt: base.Add(-time.Duration(age) * time.Minute)}
}

func status(sbs []SandboxStatus, cs ...*ContainerStatus) *PodStatus {
	st := &PodStatus{UID: "uid", Name: "p", Namespace: "default", Sandboxes: sbs, Containers: cs}
	if len(sbs) > 0 && sbs[0].Ready {
		st.IPs = sbs[0].IPs
	}
	sortContainers(st.Containers)
	return st
}

func TestComputePodActions(t *testing.T) {
	always := testPod(v1.RestartPolicyAlways, "a", "b")
	never := testPod(v1.RestartPolicyNever, "a")
	onFailure := testPod(v1.RestartPolicyOnFailure, "a", "b")
	changed := testPod(v1.RestartPolicyAlways, "a")
	changedRunning := ctr(changed, "a", StateRunning, 0, 0)
	changedRunning.Hash++
	initPod := withInit(testPod(v1.RestartPolicyAlways, "app"), "i1", "i2")
	initNever := withInit(testPod(v1.RestartPolicyNever, "app"), "i1")
	sidecar := withInit(testPod(v1.RestartPolicyAlways, "app"), "side", "i2")
	alwaysRestart := v1.ContainerRestartPolicyAlways
	sidecar.Spec.InitContainers[0].RestartPolicy = &alwaysRestart
	hostNet := testPod(v1.RestartPolicyAlways, "a")
	hostNet.Spec.HostNetwork = true

	livePod := testPod(v1.RestartPolicyAlways, "a")
	liveRunning := ctr(livePod, "a", StateRunning, 0, 0)
	neverLive := testPod(v1.RestartPolicyNever, "a")
	neverRunning := ctr(neverLive, "a", StateRunning, 0, 0)
	five := int64(5)
	// A sidecar with a startup probe, and a pod with debug containers.
	startupSidecar := withInit(testPod(v1.RestartPolicyAlways, "app"), "side")
	startupSidecar.Spec.InitContainers[0].RestartPolicy = &alwaysRestart
	startupSidecar.Spec.InitContainers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	debug := testPod(v1.RestartPolicyAlways, "app")
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36"}, TargetContainerName: "app"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "done", Image: "busybox:1.36"}},
	}
	debugInit := withInit(testPod(v1.RestartPolicyAlways, "app"), "i1")
	debugInit.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36"}}}
	ephemeral := func(p *v1.Pod, name string, state ContainerState) *ContainerStatus {
		return &ContainerStatus{ID: name + "-id", Name: name, State: state, CreatedAt: base}
	}
	cases := []struct {
		name           string
		pod            *v1.Pod
		st             *PodStatus
		unhealthy      map[string]Unhealthy
		startupPending map[string]bool
		want           PodActions
	}{
		{
			name: "running sidecar whose startup probe has not succeeded holds back the app containers",
			pod:  startupSidecar, st: status([]SandboxStatus{readySandbox()}, ctr(startupSidecar, "side", StateRunning, 0, 0)),
			startupPending: map[string]bool{"side": true},
			want:           PodActions{SandboxID: "sb1"},
		},
		{
			name: "running sidecar that has started lets the app containers start",
			pod:  startupSidecar, st: status([]SandboxStatus{readySandbox()}, ctr(startupSidecar, "side", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}},
		},
		{
			name: "an ephemeral container added to a running pod is started, nothing else",
			pod:  debug, st: status([]SandboxStatus{readySandbox()}, ctr(debug, "app", StateRunning, 0, 0), ephemeral(debug, "done", StateExited)),
			want: PodActions{SandboxID: "sb1", EphemeralContainersToStart: []int{0}},
		},
		{
			name: "ephemeral containers that ran are never started again",
			pod:  debug, st: status([]SandboxStatus{readySandbox()}, ctr(debug, "app", StateRunning, 0, 0), ephemeral(debug, "debugger", StateExited), ephemeral(debug, "done", StateExited)),
			want: PodActions{SandboxID: "sb1"},
		},
		{
			name: "an ephemeral container starts while an init container still runs",
			pod:  debugInit, st: status([]SandboxStatus{readySandbox()}, ctr(debugInit, "i1", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1", EphemeralContainersToStart: []int{0}},
		},
		{
			name: "a new sandbox starts no ephemeral container (the next sync does)",
			pod:  debug, st: status(nil),
			want: PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: []int{0}},
		},
		{
			name: "failed liveness probe kills and restarts the container",
			pod:  livePod, st: status([]SandboxStatus{readySandbox()}, liveRunning),
			unhealthy: map[string]Unhealthy{"a": {ContainerID: liveRunning.ID, Message: "Container a failed liveness probe, will be restarted", GracePeriod: &five}},
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0},
				ContainersToKill: []ContainerToKill{{ID: liveRunning.ID, Name: "a", Message: "Container a failed liveness probe, will be restarted", GracePeriod: &five}}},
		},
		{
			name: "a liveness failure of an older instance is ignored",
			pod:  livePod, st: status([]SandboxStatus{readySandbox()}, liveRunning),
			unhealthy: map[string]Unhealthy{"a": {ContainerID: "old", Message: "x"}},
			want:      PodActions{SandboxID: "sb1"},
		},
		{
			name: "failed liveness under Never kills without restart",
			pod:  neverLive, st: status([]SandboxStatus{readySandbox()}, neverRunning),
			unhealthy: map[string]Unhealthy{"a": {ContainerID: neverRunning.ID, Message: "m"}},
			want:      PodActions{SandboxID: "sb1", KillPod: true},
		},
		{
			name: "new pod creates a sandbox and starts every container",
			pod:  always, st: status(nil),
			want: PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: []int{0, 1}},
		},
		{
			name: "running pod needs nothing",
			pod:  always, st: status([]SandboxStatus{readySandbox()}, ctr(always, "a", StateRunning, 0, 0), ctr(always, "b", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1"},
		},
		{
			name: "exited container restarts under Always",
			pod:  always, st: status([]SandboxStatus{readySandbox()}, ctr(always, "a", StateRunning, 0, 0), ctr(always, "b", StateExited, 0, 0)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{1}},
		},
		{
			name: "OnFailure restarts the failed container only",
			pod:  onFailure, st: status([]SandboxStatus{readySandbox()}, ctr(onFailure, "a", StateExited, 0, 0), ctr(onFailure, "b", StateExited, 1, 0)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{1}},
		},
		{
			name: "OnFailure with every container succeeded stops the sandbox",
			pod:  onFailure, st: status([]SandboxStatus{readySandbox()}, ctr(onFailure, "a", StateExited, 0, 0), ctr(onFailure, "b", StateExited, 0, 0)),
			want: PodActions{KillPod: true, SandboxID: "sb1"},
		},
		{
			name: "Never does not restart a failed container and stops the sandbox",
			pod:  never, st: status([]SandboxStatus{readySandbox()}, ctr(never, "a", StateExited, 2, 0)),
			want: PodActions{KillPod: true, SandboxID: "sb1"},
		},
		{
			name: "Never with a dead sandbox after a run creates nothing",
			pod:  never, st: status([]SandboxStatus{{ID: "sb1", Attempt: 0}}, ctr(never, "a", StateExited, 0, 0)),
			want: PodActions{KillPod: true, Attempt: 1, SandboxID: "sb1"},
		},
		{
			name: "dead sandbox is replaced with the next attempt",
			pod:  always, st: status([]SandboxStatus{{ID: "sb1", Attempt: 2}}, ctr(always, "a", StateExited, 0, 0)),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 3, SandboxID: "sb1", ContainersToStart: []int{0, 1}},
		},
		{
			name: "sandbox without an IP is replaced",
			pod:  always, st: status([]SandboxStatus{{ID: "sb1", Ready: true}}),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxID: "sb1", ContainersToStart: []int{0, 1}},
		},
		{
			name: "host network pod keeps a sandbox without a pod IP",
			pod:  hostNet, st: status([]SandboxStatus{{ID: "sb1", Ready: true, HostNetwork: true}}, ctr(hostNet, "a", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1"},
		},
		{
			name: "changed spec kills and restarts the container",
			pod:  changed, st: status([]SandboxStatus{readySandbox()}, changedRunning),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0},
				ContainersToKill: []ContainerToKill{{ID: changedRunning.ID, Name: "a", Container: &changed.Spec.Containers[0], Message: "Container a definition changed"}}},
		},
		{
			name: "new pod with init containers starts only the first",
			pod:  initPod, st: status(nil),
			want: PodActions{KillPod: true, CreateSandbox: true, InitContainersToStart: []int{0}},
		},
		{
			name: "running init container is waited for",
			pod:  initPod, st: status([]SandboxStatus{readySandbox()}, ctr(initPod, "i1", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1"},
		},
		{
			name: "succeeded init container is followed by the next",
			pod:  initPod, st: status([]SandboxStatus{readySandbox()}, ctr(initPod, "i1", StateExited, 0, 0)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}},
		},
		{
			name: "failed init container is retried under Always",
			pod:  initPod, st: status([]SandboxStatus{readySandbox()}, ctr(initPod, "i1", StateExited, 1, 0)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}},
		},
		{
			name: "failed init container under Never fails the pod",
			pod:  initNever, st: status([]SandboxStatus{readySandbox()}, ctr(initNever, "i1", StateExited, 1, 0)),
			want: PodActions{KillPod: true, SandboxID: "sb1"},
		},
		{
			name: "all init containers done starts the app containers",
			pod:  initPod, st: status([]SandboxStatus{readySandbox()}, ctr(initPod, "i1", StateExited, 0, 1), ctr(initPod, "i2", StateExited, 0, 0)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}},
		},
		{
			name: "running sidecar lets the next init container start",
			pod:  sidecar, st: status([]SandboxStatus{readySandbox()}, ctr(sidecar, "side", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}},
		},
		{
			name: "exited sidecar is restarted beside running app containers",
			pod:  sidecar, st: status([]SandboxStatus{readySandbox()}, ctr(sidecar, "side", StateExited, 0, 1), ctr(sidecar, "i2", StateExited, 0, 1), ctr(sidecar, "app", StateRunning, 0, 0)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}},
		},
		{
			name: "sidecar that failed its liveness probe is killed and restarted",
			pod:  sidecar, st: status([]SandboxStatus{readySandbox()}, ctr(sidecar, "side", StateRunning, 0, 1), ctr(sidecar, "i2", StateExited, 0, 1), ctr(sidecar, "app", StateRunning, 0, 0)),
			unhealthy: map[string]Unhealthy{"side": {ContainerID: "side-id-b", Message: "Container side failed liveness probe, will be restarted", GracePeriod: &five}},
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0},
				ContainersToKill: []ContainerToKill{{ID: "side-id-b", Name: "side", Message: "Container side failed liveness probe, will be restarted", GracePeriod: &five}}},
		},
		{
			name: "sidecar that failed its startup probe is restarted before the next init container",
			pod:  sidecar, st: status([]SandboxStatus{readySandbox()}, ctr(sidecar, "side", StateRunning, 0, 0), ctr(sidecar, "i2", StateRunning, 0, 0)),
			unhealthy: map[string]Unhealthy{"side": {ContainerID: "side-id-a", Message: "Container side failed startup probe, will be restarted"}},
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0},
				ContainersToKill: []ContainerToKill{{ID: "side-id-a", Name: "side", Message: "Container side failed startup probe, will be restarted"}}},
		},
		{
			name: "container in unknown state is killed and restarted",
			pod:  testPod(v1.RestartPolicyAlways, "a"), st: status([]SandboxStatus{readySandbox()}, &ContainerStatus{ID: "u", Name: "a", State: StateUnknown}),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "u", Name: "a", Message: "Container a is in an unknown state, it will be killed and re-created."}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ComputePodActions(Inputs{Pod: tc.pod, Status: tc.st, Unhealthy: tc.unhealthy, StartupPending: tc.startupPending})
			for i := range got.ContainersToKill {
				if tc.want.ContainersToKill[i].Container == nil {
					got.ContainersToKill[i].Container = nil
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ComputePodActions:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestShouldRestartInitContainers(t *testing.T) {
	p := withInit(testPod(v1.RestartPolicyAlways, "app"), "init")
	ic := &p.Spec.InitContainers[0]
	if ShouldRestart(p, ic, ctr(p, "init", StateExited, 0, 0)) {
		t.Fatal("a succeeded init container must not run again")
	}
	if !ShouldRestart(p, ic, ctr(p, "init", StateExited, 1, 0)) {
		t.Fatal("a failed init container must be retried under restartPolicy Always")
	}
}

func TestShouldRestartIgnoresDeletedPods(t *testing.T) {
	p := testPod(v1.RestartPolicyAlways, "a")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	if ShouldRestart(p, &p.Spec.Containers[0], nil) {
		t.Fatal("a pod being deleted must not start containers")
	}
}

func TestGracePeriod(t *testing.T) {
	thirty, one, five := int64(30), int64(1), int64(5)
	cases := []struct {
		name     string
		spec     *int64
		deletion *int64
		override *int64
		want     int64
	}{
		{name: "default", want: 30},
		{name: "spec", spec: &thirty, want: 30},
		{name: "deletion wins over spec", spec: &thirty, deletion: &five, want: 5},
		{name: "override wins", spec: &thirty, deletion: &five, override: &one, want: MinGracePeriod},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod(v1.RestartPolicyAlways, "a")
			p.Spec.TerminationGracePeriodSeconds = tc.spec
			p.DeletionGracePeriodSeconds = tc.deletion
			if got := GracePeriod(p, tc.override); got != tc.want {
				t.Fatalf("GracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
}
