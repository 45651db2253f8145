package kuberuntime

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
)

func rr(cpuReq, memReq, cpuLim, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for _, x := range []struct {
		l    v1.ResourceList
		name v1.ResourceName
		q    string
	}{{r.Requests, v1.ResourceCPU, cpuReq}, {r.Requests, v1.ResourceMemory, memReq}, {r.Limits, v1.ResourceCPU, cpuLim}, {r.Limits, v1.ResourceMemory, memLim}} {
		if x.q != "" {
			x.l[x.name] = resource.MustParse(x.q)
		}
	}
	return r
}

// TestComputePodActionsResize: the in-place resize decisions, as
// upstream's computePodResizeAction (TestComputePodActionsForPodResize).
func TestComputePodActionsResize(t *testing.T) {
	mk := func(res v1.ResourceRequirements, policy ...v1.ContainerResizePolicy) *v1.Pod {
		p := testPod(v1.RestartPolicyAlways, "a")
		p.Spec.Containers[0].Resources = res
		p.Spec.Containers[0].ResizePolicy = policy
		return p
	}
	act := func(r v1.ResourceRequirements) *allocation.PodResources {
		return &allocation.PodResources{ContainerResources: map[string]v1.ResourceRequirements{"a": r}}
	}
	old := rr("100m", "100Mi", "200m", "200Mi")
	run := func(p *v1.Pod) *PodStatus {
		return status([]SandboxStatus{readySandbox()}, ctr(p, "a", StateRunning, 0, 0))
	}
	restartMem := v1.ContainerResizePolicy{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}
	cases := []struct {
		name     string
		pod      *v1.Pod
		actuated *allocation.PodResources
		exited   bool
		want     func(p *v1.Pod, id string) PodActions
	}{
		{name: "nothing changed", pod: mk(old), actuated: act(old),
			want: func(p *v1.Pod, id string) PodActions { return PodActions{SandboxID: "sb1"} }},
		{name: "no actuated store: resize off", pod: mk(rr("1", "", "", "")), actuated: nil,
			want: func(p *v1.Pod, id string) PodActions { return PodActions{SandboxID: "sb1"} }},
		{name: "cpu grows in place", pod: mk(rr("300m", "100Mi", "400m", "200Mi")), actuated: act(old),
			want: func(p *v1.Pod, id string) PodActions {
				return PodActions{SandboxID: "sb1", Resize: Resize{CPU: []ContainerUpdate{{ID: id, Name: "a", Container: &p.Spec.Containers[0],
					Desired: Values{CPURequest: 300, CPULimit: 400, MemoryRequest: 100 << 20, MemoryLimit: 200 << 20},
					Current: Values{CPURequest: 100, CPULimit: 200, MemoryRequest: 100 << 20, MemoryLimit: 200 << 20}}}}}
			}},
		{name: "memory limit shrinks in place (NotRequired)", pod: mk(rr("100m", "100Mi", "200m", "150Mi")), actuated: act(old),
			want: func(p *v1.Pod, id string) PodActions {
				return PodActions{SandboxID: "sb1", Resize: Resize{Memory: []ContainerUpdate{{ID: id, Name: "a", Container: &p.Spec.Containers[0],
					Desired: Values{CPURequest: 100, CPULimit: 200, MemoryRequest: 100 << 20, MemoryLimit: 150 << 20},
					Current: Values{CPURequest: 100, CPULimit: 200, MemoryRequest: 100 << 20, MemoryLimit: 200 << 20}}}}}
			}},
		{name: "RestartContainer for memory restarts the container and resizes the pod cgroup",
			pod: mk(rr("100m", "100Mi", "200m", "300Mi"), restartMem), actuated: act(old),
			want: func(p *v1.Pod, id string) PodActions {
				return PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, Resize: Resize{Pod: true},
					ContainersToKill: []ContainerToKill{{ID: id, Name: "a", Container: &p.Spec.Containers[0], Message: "Container a resize requires restart"}}}
			}},
		{name: "RestartContainer for memory, but only CPU changed: in place",
			pod: mk(rr("150m", "100Mi", "200m", "200Mi"), restartMem), actuated: act(old),
			want: func(p *v1.Pod, id string) PodActions {
				return PodActions{SandboxID: "sb1", Resize: Resize{CPU: []ContainerUpdate{{ID: id, Name: "a", Container: &p.Spec.Containers[0],
					Desired: Values{CPURequest: 150, CPULimit: 200, MemoryRequest: 100 << 20, MemoryLimit: 200 << 20},
					Current: Values{CPURequest: 100, CPULimit: 200, MemoryRequest: 100 << 20, MemoryLimit: 200 << 20}}}}}
			}},
		{name: "a missing record counts as nothing applied", pod: mk(rr("100m", "", "", "")), actuated: &allocation.PodResources{},
			want: func(p *v1.Pod, id string) PodActions {
				return PodActions{SandboxID: "sb1", Resize: Resize{CPU: []ContainerUpdate{{ID: id, Name: "a", Container: &p.Spec.Containers[0],
					Desired: Values{CPURequest: 100}}}}}
			}},
		{name: "a container not running is sized when it starts", pod: mk(rr("1", "", "", "")), actuated: act(old), exited: true,
			want: func(p *v1.Pod, id string) PodActions {
				return PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}
			}},
		{name: "pod-level resources changed: the pod cgroup follows", actuated: &allocation.PodResources{
			ContainerResources: map[string]v1.ResourceRequirements{"a": {}}, PodLevelResources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}},
			pod: func() *v1.Pod {
				p := mk(v1.ResourceRequirements{})
				p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
				return p
			}(),
			want: func(p *v1.Pod, id string) PodActions { return PodActions{SandboxID: "sb1"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := run(tc.pod)
			if tc.exited {
				st.Containers[0].State = StateExited
			}
			got := ComputePodActions(Inputs{Pod: tc.pod, Status: st, Actuated: tc.actuated})
			want := tc.want(tc.pod, st.Containers[0].ID)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ComputePodActions:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// Decreases go first, so the pod's sum never overshoots while containers
// are updated one by one.
func TestResizeOrdersDecreasesFirst(t *testing.T) {
	p := testPod(v1.RestartPolicyAlways, "up", "down")
	p.Spec.Containers[0].Resources = rr("200m", "", "", "")
	p.Spec.Containers[1].Resources = rr("50m", "", "", "")
	act := &allocation.PodResources{ContainerResources: map[string]v1.ResourceRequirements{"up": rr("100m", "", "", ""), "down": rr("100m", "", "", "")}}
	st := status([]SandboxStatus{readySandbox()}, ctr(p, "up", StateRunning, 0, 0), ctr(p, "down", StateRunning, 0, 0))
	got := ComputePodActions(Inputs{Pod: p, Status: st, Actuated: act})
	if len(got.Resize.CPU) != 2 || got.Resize.CPU[0].Name != "down" || got.Resize.CPU[1].Name != "up" {
		t.Fatalf("CPU updates %+v, want down then up", got.Resize.CPU)
	}
}

// fakeResizer is a pod cgroup in memory.
type fakeResizer struct {
	rc      cgroups.ResourceConfig
	usage   uint64
	updates []cgroups.ResourceConfig
}

func (f *fakeResizer) DesiredPod(pod *v1.Pod) cgroups.ResourceConfig {
	return cgroups.PodResourceConfig(pod, cgroups.PodOptions{EnforceCPULimits: true})
}
func (f *fakeResizer) ReadPod(*v1.Pod) (cgroups.ResourceConfig, bool, error) { return f.rc, true, nil }
func (f *fakeResizer) UpdatePod(_ *v1.Pod, rc cgroups.ResourceConfig) error {
	f.updates = append(f.updates, rc)
	if rc.Memory != nil {
		f.rc.Memory = rc.Memory
	}
	if rc.CPUShares != nil {
		f.rc.CPUShares = rc.CPUShares
	}
	if rc.CPUQuota != nil {
		f.rc.CPUQuota = rc.CPUQuota
	}
	return nil
}
func (f *fakeResizer) PodMemoryUsage(*v1.Pod) (uint64, error) { return f.usage, nil }

// An in-place resize through the fake CRI: UpdateContainerResources with
// the new values, the pod cgroup grown before and shrunk after the
// containers, the actuated record kept, and a memory limit below the
// current usage refused with upstream's message.
func TestSyncPodResizesInPlace(t *testing.T) {
	resizer := &fakeResizer{}
	actuated := allocation.NewMemoryState()
	e := newEnv(t, func(c *Config, _ *ImageConfig) { c.Actuated, c.PodResizer = actuated, resizer })
	pod := newPod("app")
	pod.Spec.Containers[0].Resources = rr("100m", "100Mi", "200m", "200Mi")
	if res := e.sync(pod, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got, ok := actuated.Container(pod.UID, "app"); !ok || got.Limits.Memory().Value() != 200<<20 {
		t.Fatalf("actuated at start = %+v %v", got, ok)
	}
	resizer.rc = resizer.DesiredPod(pod)

	grown := pod.DeepCopy()
	grown.Spec.Containers[0].Resources = rr("300m", "100Mi", "400m", "300Mi")
	res := e.sync(grown, nil)
	if res.Err != nil || res.ResizeErr != nil || !res.Resized {
		t.Fatalf("resize: %+v", res)
	}
	updates := e.cri.ResourceUpdates()
	if len(updates) != 2 {
		t.Fatalf("UpdateContainerResources calls = %d, want memory then CPU", len(updates))
	}
	if mem := updates[0].Linux; mem.MemoryLimitInBytes != 300<<20 || mem.CpuQuota != 20000 {
		t.Errorf("memory step sent limit %d quota %d, want 300Mi and the old CPU", mem.MemoryLimitInBytes, mem.CpuQuota)
	}
	if cpu := updates[1].Linux; cpu.CpuQuota != 40000 || cpu.CpuShares != 307 || cpu.MemoryLimitInBytes != 300<<20 {
		t.Errorf("CPU step sent quota %d shares %d memory %d", cpu.CpuQuota, cpu.CpuShares, cpu.MemoryLimitInBytes)
	}
	// Growing: the pod cgroup's limit was raised before the container's.
	if len(resizer.updates) == 0 || resizer.updates[0].Memory == nil || *resizer.updates[0].Memory != 300<<20 {
		t.Errorf("pod cgroup updates %+v, want the memory limit raised first", resizer.updates)
	}
	if e.m.ResizeInProgress(grown, e.status(grown)) {
		t.Error("resize still in progress after it was applied")
	}
	if st := e.status(grown); st.Containers[0].Resources.GetMemoryLimitInBytes() != 300<<20 {
		t.Errorf("runtime reports %v", st.Containers[0].Resources)
	}

	// Below what the container uses: refused, nothing sent.
	e.cri.Runtime.SetFakeContainerStats([]*runtimeapi.ContainerStats{{
		Attributes: &runtimeapi.ContainerAttributes{Id: containerID(pod, 0, "app", 0)},
		Memory:     &runtimeapi.MemoryUsage{UsageBytes: &runtimeapi.UInt64Value{Value: 150 << 20}},
	}})
	resizer.usage = 150 << 20
	shrunk := pod.DeepCopy()
	shrunk.Spec.Containers[0].Resources = rr("300m", "100Mi", "400m", "100Mi")
	res = e.sync(shrunk, nil)
	if res.ResizeErr == nil || !strings.Contains(res.ResizeErr.Error(), "memory limit (104857600) below current usage (157286400)") {
		t.Fatalf("resize below usage: %v", res.ResizeErr)
	}
	if u := e.cri.ResourceUpdates(); len(u) != 0 {
		t.Fatalf("sent %d updates for a refused resize", len(u))
	}
	if !e.m.ResizeInProgress(shrunk, e.status(shrunk)) {
		t.Fatal("a refused resize is still in progress")
	}
	_ = context.Background()
}

// A container already running with no actuated record (a kubelet from
// before in-place resize, or a lost checkpoint) is adopted as running with
// its allocated resources: no resize, no restart.
func TestRunningContainerWithoutRecordIsAdopted(t *testing.T) {
	actuated := allocation.NewMemoryState()
	e := newEnv(t, func(c *Config, _ *ImageConfig) { c.Actuated = actuated })
	pod := newPod("app")
	pod.Spec.Containers[0].Resources = rr("100m", "100Mi", "200m", "200Mi")
	pod.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
	if res := e.sync(pod, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if err := actuated.Remove(pod.UID); err != nil {
		t.Fatal(err)
	}
	res := e.sync(pod, nil)
	if res.Changed || len(e.cri.ResourceUpdates()) != 0 || len(e.cri.Stops()) != 0 {
		t.Fatalf("sync of an adopted container: %+v", res)
	}
	if got, ok := actuated.Container(pod.UID, "app"); !ok || got.Limits.Cpu().MilliValue() != 200 {
		t.Fatalf("adopted record %+v %v", got, ok)
	}
}
