package podstatus

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// Upstream's minimums below which a value read back from the runtime is
// not shown (the allocated one is): cpu.shares 2 and a 10m CPU limit (a
// 1 ms quota).
const (
	minShares        = 2
	minMilliCPULimit = 10
	sharesPerCPU     = 1024
	milliCPUPerCPU   = 1000
)

// criValues are the values a runtime reports a container runs with.
type criValues struct {
	cpuRequest, cpuLimit, memoryLimit, memoryRequest *resource.Quantity
}

// fromCRI reads the CRI's Linux resources back into quantities, as
// upstream's toKubeContainerResources: the CPU request from cpu.shares,
// the limit from the CFS quota and period, the memory limit.
func fromCRI(r *runtimeapi.LinuxContainerResources) *criValues {
	if r == nil {
		return nil
	}
	var v criValues
	if r.CpuPeriod > 0 && r.CpuQuota != -1 {
		if m := r.CpuQuota * milliCPUPerCPU / r.CpuPeriod; m > 0 {
			v.cpuLimit = resource.NewMilliQuantity(m, resource.DecimalSI)
		}
	}
	if r.CpuShares >= minShares {
		if m := int64(math.Ceil(float64(r.CpuShares*milliCPUPerCPU) / float64(sharesPerCPU))); m > 0 {
			v.cpuRequest = resource.NewMilliQuantity(m, resource.DecimalSI)
		}
	}
	if r.MemoryLimitInBytes > 0 {
		v.memoryLimit = resource.NewQuantity(r.MemoryLimitInBytes, resource.BinarySI)
	}
	if v.cpuLimit == nil && v.cpuRequest == nil && v.memoryLimit == nil {
		return nil
	}
	return &v
}

// statusResources is a container's status.resources, as upstream's
// convertContainerStatusResources: the allocated resources for a container
// that does not run; for one that runs, the values the runtime reports,
// filled in from what the kubelet applied (actuated) where it reports
// none, and kept from the previous status of the same instance where
// neither knows. Values at or below the kernel's minimums show the
// allocated ones. It is pure.
func statusResources(allocated v1.ResourceRequirements, latest *kuberuntime.ContainerStatus, actuated *v1.ResourceRequirements, old *v1.ContainerStatus, containerID string) *v1.ResourceRequirements {
	res := allocated.DeepCopy()
	if latest == nil || latest.State != kuberuntime.StateRunning {
		return res
	}
	cri := fromCRI(latest.Resources)
	if actuated != nil {
		if cri == nil {
			cri = &criValues{cpuRequest: actuated.Requests.Cpu(), cpuLimit: actuated.Limits.Cpu(),
				memoryRequest: actuated.Requests.Memory(), memoryLimit: actuated.Limits.Memory()}
		} else if q := actuated.Requests[v1.ResourceMemory]; !q.IsZero() {
			cri.memoryRequest = &q
		}
	}
	if cri == nil {
		cri = &criValues{}
	}
	var oldRes *v1.ResourceRequirements
	if old != nil && old.State.Running != nil && old.ContainerID == containerID {
		oldRes = old.Resources
	}
	keep := func(name v1.ResourceName, oldList, list v1.ResourceList) {
		if oldRes != nil && oldList != nil {
			if q, ok := oldList[name]; ok {
				list[name] = q.DeepCopy()
			}
		}
	}
	oldLimits, oldRequests := v1.ResourceList(nil), v1.ResourceList(nil)
	if oldRes != nil {
		oldLimits, oldRequests = oldRes.Limits, oldRes.Requests
	}
	if res.Limits != nil {
		if cri.cpuLimit != nil {
			if cri.cpuLimit.MilliValue() > minMilliCPULimit || res.Limits.Cpu().MilliValue() > minMilliCPULimit {
				res.Limits[v1.ResourceCPU] = cri.cpuLimit.DeepCopy()
			}
		} else {
			keep(v1.ResourceCPU, oldLimits, res.Limits)
		}
		if cri.memoryLimit != nil {
			res.Limits[v1.ResourceMemory] = cri.memoryLimit.DeepCopy()
		} else {
			keep(v1.ResourceMemory, oldLimits, res.Limits)
		}
	}
	if res.Requests != nil {
		if cri.cpuRequest != nil {
			if cri.cpuRequest.MilliValue() > minShares || res.Requests.Cpu().MilliValue() > minShares {
				res.Requests[v1.ResourceCPU] = cri.cpuRequest.DeepCopy()
			}
		} else {
			keep(v1.ResourceCPU, oldRequests, res.Requests)
		}
		if cri.memoryRequest != nil {
			res.Requests[v1.ResourceMemory] = cri.memoryRequest.DeepCopy()
		} else {
			keep(v1.ResourceMemory, oldRequests, res.Requests)
		}
	}
	return res
}

// podResources are the pod's status.resources and
// status.allocatedResources: the allocated pod's effective requirements
// (pod-level ones, or the sum of its containers'), as upstream reports
// them (InPlacePodLevelResourcesVerticalScaling, beta and on in v1.36).
func podResources(pod *v1.Pod) (*v1.ResourceRequirements, v1.ResourceList) {
	res := pod.Spec.Resources.DeepCopy()
	if res == nil {
		res = &v1.ResourceRequirements{}
	}
	res.Requests = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	res.Limits = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	return res, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// actuatedOf is one container's actuated record, nil when there is none.
func actuatedOf(act *allocation.PodResources, name string) *v1.ResourceRequirements {
	if act == nil {
		return nil
	}
	r, ok := act.ContainerResources[name]
	if !ok {
		return nil
	}
	return &r
}
