package kuberuntime

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// brief is a container status cut to what TestGetPodStatus compares.
type brief struct {
	Name         string
	State        ContainerState
	RestartCount int
	SandboxID    string
	Image        string
	ExitCode     int32
	Message      string
}

func briefs(cs []*ContainerStatus) []brief {
	var out []brief
	for _, c := range cs {
		out = append(out, brief{c.Name, c.State, c.RestartCount, c.SandboxID, c.Image, c.ExitCode, c.Message})
	}
	return out
}

// TestGetPodStatus reads pods back from the fake runtime: upstream's
// TestGetPodStatus (identity and the sandbox IP) and what our PodStatus
// promises: sandboxes and containers newest first, the IPs of the newest
// ready sandbox, the spec hash and restart count from the container's
// annotations, and the termination message of an exited container.
func TestGetPodStatus(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name  string
		pod   *v1.Pod
		setup func(e *env, pod *v1.Pod)
		// wantErr is the error GetPodStatus returns ("" for none).
		wantErr        string
		wantSandboxes  []SandboxStatus // compared on ID, Ready, Attempt, IPs, HostNetwork
		wantContainers []brief
		wantIPs        []string
	}{
		{
			name:    "a pod the runtime does not have",
			pod:     newPod("foo1"),
			setup:   func(*env, *v1.Pod) {},
			wantIPs: nil,
		},
		{
			name:          "a running pod",
			pod:           newPod("foo1", "foo2"),
			wantSandboxes: []SandboxStatus{{ID: "foo_new_12345678_0", Ready: true, IPs: []string{"192.168.192.168"}}},
			wantContainers: []brief{
				{"foo2", StateRunning, 0, "foo_new_12345678_0", "busybox", 0, ""},
				{"foo1", StateRunning, 0, "foo_new_12345678_0", "busybox", 0, ""},
			},
			wantIPs: []string{"192.168.192.168"},
		},
		{
			name: "a re-created sandbox: newest first, instances newest first",
			pod:  newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.clk.Step(time.Second)
				e.cri.Runtime.StopPodSandbox(e.ctx, sandboxID(pod, 0))
				e.sync(pod, nil)
			},
			wantSandboxes: []SandboxStatus{
				{ID: "foo_new_12345678_1", Ready: true, Attempt: 1, IPs: []string{"192.168.192.168"}},
				{ID: "foo_new_12345678_0", Attempt: 0},
			},
			wantContainers: []brief{
				{"foo1", StateRunning, 1, "foo_new_12345678_1", "busybox", 0, ""},
				{"foo1", StateExited, 0, "foo_new_12345678_0", "busybox", 0, ""},
			},
			wantIPs: []string{"192.168.192.168"},
		},
		{
			name: "a host-network pod",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				p.Spec.HostNetwork = true
				return p
			}(),
			wantSandboxes:  []SandboxStatus{{ID: "foo_new_12345678_0", Ready: true, IPs: []string{"192.168.192.168"}, HostNetwork: true}},
			wantContainers: []brief{{"foo1", StateRunning, 0, "foo_new_12345678_0", "busybox", 0, ""}},
			wantIPs:        []string{"192.168.192.168"},
		},
		{
			name: "an exited container: its termination message",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				return p
			}(),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				for _, m := range e.containerMounts(containerID(pod, 0, "foo1", 0)) {
					if m.ContainerPath == "/dev/termination-log" {
						if err := os.WriteFile(m.HostPath, []byte("done: 42 rows"), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				e.clk.Step(time.Second)
				e.exit(pod, 0, "foo1", 0, 3)
			},
			wantSandboxes:  []SandboxStatus{{ID: "foo_new_12345678_0", Ready: true, IPs: []string{"192.168.192.168"}}},
			wantContainers: []brief{{"foo1", StateExited, 0, "foo_new_12345678_0", "busybox", 3, "done: 42 rows"}},
			wantIPs:        []string{"192.168.192.168"},
		},
		{
			name: "containers the kubelet did not create are ignored",
			pod:  newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.cri.Runtime.Lock()
				e.cri.Runtime.Containers["alien"] = &apitest.FakeContainer{ContainerStatus: runtimeapi.ContainerStatus{
					Id: "alien", Metadata: &runtimeapi.ContainerMetadata{Name: "alien"},
					Labels: map[string]string{criconfig.LabelPodUID: string(pod.UID)},
					State:  runtimeapi.ContainerState_CONTAINER_RUNNING,
				}, SandboxID: sandboxID(pod, 0)}
				e.cri.Runtime.Unlock()
			},
			wantSandboxes:  []SandboxStatus{{ID: "foo_new_12345678_0", Ready: true, IPs: []string{"192.168.192.168"}}},
			wantContainers: []brief{{"foo1", StateRunning, 0, "foo_new_12345678_0", "busybox", 0, ""}},
			wantIPs:        []string{"192.168.192.168"},
		},
		{
			name: "a container removed between list and status is skipped",
			pod:  newPod("foo1", "foo2"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.cri.Runtime.InjectError("ContainerStatus", boom)
			},
			wantSandboxes:  []SandboxStatus{{ID: "foo_new_12345678_0", Ready: true, IPs: []string{"192.168.192.168"}}},
			wantContainers: []brief{{"foo*", StateRunning, 0, "foo_new_12345678_0", "busybox", 0, ""}},
			wantIPs:        []string{"192.168.192.168"},
		},
		{
			name:    "sandboxes cannot be listed",
			pod:     newPod("foo1"),
			setup:   func(e *env, pod *v1.Pod) { e.sync(pod, nil); e.cri.Runtime.InjectError("ListPodSandbox", boom) },
			wantErr: "list sandboxes of pod new/foo: rpc error: code = Unknown desc = boom",
		},
		{
			name:    "a sandbox's status cannot be read",
			pod:     newPod("foo1"),
			setup:   func(e *env, pod *v1.Pod) { e.sync(pod, nil); e.cri.Runtime.InjectError("PodSandboxStatus", boom) },
			wantErr: "status of sandbox foo_new_12345678_0 of pod new/foo: rpc error: code = Unknown desc = boom",
		},
		{
			name:    "containers cannot be listed",
			pod:     newPod("foo1"),
			setup:   func(e *env, pod *v1.Pod) { e.sync(pod, nil); e.cri.Runtime.InjectError("ListContainers", boom) },
			wantErr: "list containers of pod new/foo: rpc error: code = Unknown desc = boom",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			pod := tc.pod.DeepCopy()
			if tc.setup != nil {
				tc.setup(e, pod)
			} else {
				e.sync(pod, nil)
			}
			st, err := e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.UID != pod.UID || st.Name != pod.Name || st.Namespace != pod.Namespace {
				t.Errorf("identity %s %s/%s", st.UID, st.Namespace, st.Name)
			}
			var sbs []SandboxStatus
			for _, sb := range st.Sandboxes {
				sbs = append(sbs, SandboxStatus{ID: sb.ID, Ready: sb.Ready, Attempt: sb.Attempt, IPs: sb.IPs, HostNetwork: sb.HostNetwork})
			}
			if !reflect.DeepEqual(sbs, tc.wantSandboxes) {
				t.Errorf("sandboxes\n got %+v\nwant %+v", sbs, tc.wantSandboxes)
			}
			got := briefs(st.Containers)
			if len(tc.wantContainers) == 1 && strings.HasSuffix(tc.wantContainers[0].Name, "*") && len(got) == 1 &&
				strings.HasPrefix(got[0].Name, strings.TrimSuffix(tc.wantContainers[0].Name, "*")) {
				got[0].Name = tc.wantContainers[0].Name
			}
			if !reflect.DeepEqual(got, tc.wantContainers) {
				t.Errorf("containers\n got %+v\nwant %+v", got, tc.wantContainers)
			}
			if !reflect.DeepEqual(st.IPs, tc.wantIPs) {
				t.Errorf("IPs %v, want %v", st.IPs, tc.wantIPs)
			}
			for _, c := range st.Containers {
				if spec := criconfig.FindContainer(pod, c.Name); spec != nil && c.Hash != criconfig.ContainerHash(spec) {
					t.Errorf("container %s hash %x, want the spec's %x", c.Name, c.Hash, criconfig.ContainerHash(spec))
				}
			}
		})
	}
}

// A container records the pod's grace periods and its preStop hook, so a
// kubelet that lost the spec still stops it as asked.
func TestGetPodStatusRestoresStopInstructions(t *testing.T) {
	e := newEnv(t, nil)
	pod := withPreStop(newPod("foo1"), "foo1")
	pod.Spec.TerminationGracePeriodSeconds = int64p(45)
	e.sync(pod, nil)
	c := e.status(pod).FindContainer("foo1")
	if c.GracePeriod == nil || *c.GracePeriod != 45 || !reflect.DeepEqual(c.PreStop, pod.Spec.Containers[0].Lifecycle.PreStop) {
		t.Fatalf("restored grace %v preStop %+v", c.GracePeriod, c.PreStop)
	}
	// A pod deleted with a shorter grace period: its containers say so.
	deleted := newPod("foo1")
	deleted.UID = "deleted"
	deleted.DeletionGracePeriodSeconds = int64p(5)
	e.sync(deleted, nil)
	if c := e.status(deleted).FindContainer("foo1"); c.GracePeriod == nil || *c.GracePeriod != 5 {
		t.Fatalf("deletion grace period %v, want 5", c.GracePeriod)
	}
}

// TestGetPods groups what the runtime has by pod, as upstream's
// TestGetPods: with all=false only ready sandboxes and running containers.
func TestGetPods(t *testing.T) {
	e := newEnv(t, nil)
	a := newPod("a1", "a2")
	b := newPod("b1")
	b.Name, b.UID = "bar", "87654321"
	e.sync(a, nil)
	e.sync(b, nil)
	e.clk.Step(time.Second)
	e.exit(a, 0, "a2", 0, 0)
	e.cri.Runtime.Lock()
	e.cri.Runtime.Sandboxes["alien"] = &apitest.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id: "alien", State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Name: "alien"}}}
	e.cri.Runtime.Unlock()

	summary := func(pods []*RunningPod) map[types.UID][]string {
		out := map[types.UID][]string{}
		for _, p := range pods {
			for _, sb := range p.Sandboxes {
				out[p.UID] = append(out[p.UID], "sandbox "+sb.ID)
			}
			for _, c := range p.Containers {
				out[p.UID] = append(out[p.UID], c.Name+" "+string(c.State))
			}
			if p.Name == "" || p.Namespace != "new" {
				t.Errorf("pod %s named %s/%s", p.UID, p.Namespace, p.Name)
			}
		}
		return out
	}
	running, err := e.m.GetPods(e.ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID][]string{
		"12345678": {"sandbox foo_new_12345678_0", "a1 running"},
		"87654321": {"sandbox bar_new_87654321_0", "b1 running"},
	}
	if got := summary(running); !reflect.DeepEqual(got, want) {
		t.Errorf("running pods %v, want %v", got, want)
	}
	all, err := e.m.GetPods(e.ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	got := summary(all)
	if len(got["12345678"]) != 3 || !strings.Contains(strings.Join(got["12345678"], ","), "a2 exited") {
		t.Errorf("all pods %v: want a2 exited listed too", got)
	}

	e.cri.Runtime.InjectError("ListPodSandbox", errors.New("boom"))
	if _, err := e.m.GetPods(e.ctx, true); err == nil || !strings.Contains(err.Error(), "list pod sandboxes") {
		t.Errorf("error %v, want the list error", err)
	}
	e.cri.Runtime.InjectError("ListContainers", errors.New("boom"))
	if _, err := e.m.GetPods(e.ctx, true); err == nil || !strings.Contains(err.Error(), "list containers") {
		t.Errorf("error %v, want the list error", err)
	}
}

func TestPodStatusHelpers(t *testing.T) {
	st := &PodStatus{Containers: []*ContainerStatus{
		{ID: "c3", Name: "c", State: StateExited}, {ID: "d1", Name: "d", State: StateCreated},
		{ID: "c2", Name: "c", State: StateExited}, {ID: "c1", Name: "c", State: StateExited},
	}}
	if got := st.FindContainer("c"); got == nil || got.ID != "c3" {
		t.Errorf("FindContainer(c) = %+v, want the newest, c3", got)
	}
	if got := st.PreviousContainer("c"); got == nil || got.ID != "c2" {
		t.Errorf("PreviousContainer(c) = %+v, want c2", got)
	}
	if got := st.PreviousContainer("d"); got != nil {
		t.Errorf("PreviousContainer(d) = %+v, want none", got)
	}
	var none *PodStatus
	if none.FindContainer("c") != nil || none.PreviousContainer("c") != nil || none.Running() {
		t.Error("a nil status has no containers and does not run")
	}
	cases := []struct {
		name string
		st   *PodStatus
		want bool
	}{
		{name: "nothing", st: &PodStatus{}},
		{name: "exited and created containers, dead sandbox", st: &PodStatus{Sandboxes: []SandboxStatus{{ID: "s"}}, Containers: st.Containers}},
		{name: "a ready sandbox", st: &PodStatus{Sandboxes: []SandboxStatus{{ID: "s2", Ready: true}, {ID: "s1"}}}, want: true},
		{name: "a running container", st: &PodStatus{Containers: []*ContainerStatus{{Name: "c", State: StateRunning}}}, want: true},
	}
	for _, tc := range cases {
		if got := tc.st.Running(); got != tc.want {
			t.Errorf("%s: Running() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
