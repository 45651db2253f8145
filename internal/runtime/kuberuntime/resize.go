package kuberuntime

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Values are the CPU and memory a container is given, as the CRI gets
// them: milli-CPUs and bytes (upstream's resourceRequirements).
type Values struct {
	CPURequest, CPULimit       int64
	MemoryRequest, MemoryLimit int64
}

// ValuesOf are the values of r, with the pod-level limits standing in for
// the container's missing ones (as the container's cgroup gets them).
func ValuesOf(podLevel *v1.ResourceRequirements, r v1.ResourceRequirements) Values {
	v := Values{
		CPURequest: r.Requests.Cpu().MilliValue(), CPULimit: r.Limits.Cpu().MilliValue(),
		MemoryRequest: r.Requests.Memory().Value(), MemoryLimit: r.Limits.Memory().Value(),
	}
	if podLevel != nil {
		if v.CPULimit == 0 {
			v.CPULimit = podLevel.Limits.Cpu().MilliValue()
		}
		if v.MemoryLimit == 0 {
			v.MemoryLimit = podLevel.Limits.Memory().Value()
		}
	}
	return v
}

// Requirements turns values back into a container's requirements.
func (v Values) Requirements() v1.ResourceRequirements {
	return v1.ResourceRequirements{
		Limits: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(v.CPULimit, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(v.MemoryLimit, resource.BinarySI),
		},
		Requests: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(v.CPURequest, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(v.MemoryRequest, resource.BinarySI),
		},
	}
}

// ContainerUpdate is an in-place resize of one running container.
type ContainerUpdate struct {
	ID        string
	Name      string
	Container *v1.Container
	// Desired are the allocated values; Current the values last applied.
	Desired, Current Values
}

// Resize is what an in-place resize changes on the runtime.
type Resize struct {
	// Memory and CPU list the running containers whose memory or CPU
	// change in place, decreases first (so the sum never overshoots).
	Memory, CPU []ContainerUpdate
	// Pod asks for the pod cgroup to follow the allocation: a container is
	// restarted for its resize, or the pod-level resources changed.
	Pod bool
}

// Empty reports whether nothing is resized.
func (r Resize) Empty() bool { return len(r.Memory) == 0 && len(r.CPU) == 0 && !r.Pod }

// restartPolicyFor is the container's resize policy for a resource;
// NotRequired when it names none (upstream's implicit default).
func restartPolicyFor(c *v1.Container, r v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy
		}
	}
	return v1.NotRequired
}

// resizeContainer decides the in-place resize of one running container
// (upstream's computePodResizeAction): nothing when what was applied
// (actuated) equals what is allocated; a restart when a changed resource's
// resize policy is RestartContainer; else an update of the memory and/or
// CPU values. It reports whether the container keeps running.
func resizeContainer(pod *v1.Pod, c *v1.Container, s *ContainerStatus, act *allocation.PodResources, a *PodActions) (restart bool) {
	if act == nil || s == nil || s.State != StateRunning {
		return false
	}
	desired := ValuesOf(pod.Spec.Resources, c.Resources)
	current := ValuesOf(act.PodLevelResources, act.ContainerResources[c.Name])
	if desired == current {
		return false
	}
	changed := func(r v1.ResourceName, d, cur int64) (resize, restart bool) {
		if d == cur {
			return false, false
		}
		return true, restartPolicyFor(c, r) == v1.RestartContainer
	}
	memLim, rMemLim := changed(v1.ResourceMemory, desired.MemoryLimit, current.MemoryLimit)
	memReq, rMemReq := changed(v1.ResourceMemory, desired.MemoryRequest, current.MemoryRequest)
	cpuLim, rCPULim := changed(v1.ResourceCPU, desired.CPULimit, current.CPULimit)
	cpuReq, rCPUReq := changed(v1.ResourceCPU, desired.CPURequest, current.CPURequest)
	if rMemLim || rMemReq || rCPULim || rCPUReq {
		a.Resize.Pod = true
		return true
	}
	u := ContainerUpdate{ID: s.ID, Name: c.Name, Container: c, Desired: desired, Current: current}
	if memLim || memReq {
		a.Resize.Memory = append(a.Resize.Memory, u)
	}
	if cpuLim || cpuReq {
		a.Resize.CPU = append(a.Resize.CPU, u)
	}
	return false
}

// orderUpdates puts the containers whose value decreases before those
// whose value grows, each group in spec order (upstream prepends
// decreases and appends increases).
func orderUpdates(r *Resize) {
	key := func(u ContainerUpdate, memory bool) (d, c int64) {
		if memory {
			if u.Desired.MemoryLimit != u.Current.MemoryLimit {
				return u.Desired.MemoryLimit, u.Current.MemoryLimit
			}
			return u.Desired.MemoryRequest, u.Current.MemoryRequest
		}
		if u.Desired.CPULimit != u.Current.CPULimit {
			return u.Desired.CPULimit, u.Current.CPULimit
		}
		return u.Desired.CPURequest, u.Current.CPURequest
	}
	for _, list := range []struct {
		us     []ContainerUpdate
		memory bool
	}{{r.Memory, true}, {r.CPU, false}} {
		sort.SliceStable(list.us, func(i, j int) bool {
			di, ci := key(list.us[i], list.memory)
			dj, cj := key(list.us[j], list.memory)
			return di < ci && !(dj < cj)
		})
	}
}

// podLevelChanged reports whether the pod-level CPU or memory allocated
// differ from those applied (upstream's computePodLevelResourcesResizeAction).
func podLevelChanged(pod *v1.Pod, act *allocation.PodResources) bool {
	if act == nil {
		return false
	}
	return ValuesOf(nil, podLevelOrEmpty(pod.Spec.Resources)) != ValuesOf(nil, podLevelOrEmpty(act.PodLevelResources))
}

func podLevelOrEmpty(r *v1.ResourceRequirements) v1.ResourceRequirements {
	if r == nil {
		return v1.ResourceRequirements{}
	}
	return *r
}

// ResizeInProgress reports whether the resources applied to a running,
// resizable container (an app container or a sidecar) differ from those
// allocated, or the pod-level ones do (upstream's IsPodResizeInProgress).
// Stopped containers are sized when they start. It is pure.
func ResizeInProgress(pod *v1.Pod, st *PodStatus, act *allocation.PodResources) bool {
	if act == nil {
		return false
	}
	check := func(c *v1.Container) bool {
		s := st.FindContainer(c.Name)
		if s == nil || s.State != StateRunning {
			return false
		}
		return ValuesOf(pod.Spec.Resources, c.Resources) != ValuesOf(act.PodLevelResources, act.ContainerResources[c.Name])
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podutil.IsRestartableInitContainer(c) && check(c) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if check(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return pod.Spec.Resources != nil && act.PodLevelResources != nil &&
		!apiequality.Semantic.DeepEqual(ValuesOf(nil, *pod.Spec.Resources), ValuesOf(nil, *act.PodLevelResources))
}
