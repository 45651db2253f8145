package cgroups

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/qos"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// ResourceConfig is what a cgroup should hold, in cgroup v1 units. A nil
// field is left as the kernel (or the last writer) has it.
type ResourceConfig struct {
	// CPUShares is cpu.shares (v2: cpu.weight via SharesToWeight).
	CPUShares *uint64
	// CPUQuota is cpu.cfs_quota_us in microseconds; -1 means unlimited.
	CPUQuota *int64
	// CPUPeriod is cpu.cfs_period_us in microseconds.
	CPUPeriod *uint64
	// Memory is memory.limit_in_bytes; -1 means unlimited.
	Memory *int64
	// PidsLimit is pids.max; -1 (or 0) means unlimited.
	PidsLimit *int64
}

// PidResource is the internal resource name of process IDs, as upstream
// spells it in systemReserved/kubeReserved ("pid").
const PidResource v1.ResourceName = "pid"

// Upstream's cgroup minimums.
const (
	// MinShares is what BestEffort pods and their QoS cgroup get.
	MinShares uint64 = 2
)

// PodOptions are the node settings a pod cgroup depends on.
type PodOptions struct {
	// EnforceCPULimits is cpuCFSQuota: CPU limits become a CFS quota.
	EnforceCPULimits bool
	// CPUPeriod is cpuCFSQuotaPeriod in microseconds (100000 upstream).
	CPUPeriod uint64
	// PodPidsLimit is podPidsLimit; <= 0 leaves pids unlimited.
	PodPidsLimit int64
}

// PodResourceConfig decides the pod cgroup's values as upstream does: shares
// from the pod's CPU requests (the minimum when none), a CFS quota from its
// CPU limits and a memory limit when every container sets that limit
// (always for Guaranteed, never for BestEffort), and podPidsLimit. Pod
// overhead counts as part of the requests and of the non-zero limits.
func PodResourceConfig(pod *v1.Pod, o PodOptions) ResourceConfig {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	// A limit is declared when each container (an init container together
	// with the sidecars started before it) sets it, or the pod does.
	cpuLimited, memLimited := true, true
	lim := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{
		ContainerFn: func(res v1.ResourceList, _ resourcehelper.ContainerType) {
			cpuLimited = cpuLimited && !res.Cpu().IsZero()
			memLimited = memLimited && !res.Memory().IsZero()
		},
	})
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		cpuLimited = cpuLimited || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memLimited = memLimited || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	cpuReq, cpuLim, memLim := req[v1.ResourceCPU], lim[v1.ResourceCPU], lim[v1.ResourceMemory]

	shares := uint64(criconfig.MilliCPUToShares(cpuReq.MilliValue()))
	period := o.CPUPeriod
	if period == 0 {
		period = uint64(criconfig.DefaultCPUCFSQuotaPeriod)
	}
	quota := criconfig.MilliCPUToQuota(cpuLim.MilliValue(), int64(period))
	if quota == 0 || !o.EnforceCPULimits {
		quota = -1
	}
	mem := memLim.Value()

	var rc ResourceConfig
	switch qos.PodQOSClass(pod) {
	case v1.PodQOSGuaranteed:
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &mem
	case v1.PodQOSBurstable:
		rc.CPUShares = &shares
		if cpuLimited {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if memLimited {
			rc.Memory = &mem
		}
	default:
		min := MinShares
		rc.CPUShares = &min
	}
	if o.PodPidsLimit > 0 {
		pids := o.PodPidsLimit
		rc.PidsLimit = &pids
	}
	return rc
}

// QOSConfigs decides the QoS cgroups' CPU shares from the active pods:
// besteffort gets the minimum, burstable the shares of the sum of its pods'
// CPU requests (pod overhead included).
func QOSConfigs(active []*v1.Pod) (burstable, bestEffort ResourceConfig) {
	var milli int64
	for _, p := range active {
		if qos.PodQOSClass(p) != v1.PodQOSBurstable {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		if q, ok := req[v1.ResourceCPU]; ok {
			milli += q.MilliValue()
		}
	}
	b := uint64(criconfig.MilliCPUToShares(milli))
	be := MinShares
	return ResourceConfig{CPUShares: &b}, ResourceConfig{CPUShares: &be}
}

// NodeAllocatable is capacity minus the reservations, never below zero, as
// upstream enforces it on the kubepods cgroup. (Hard eviction thresholds
// are left out here, as upstream leaves them out: they lower the Node's
// reported allocatable, and the eviction manager keeps pods under them.)
func NodeAllocatable(capacity v1.ResourceList, reserved ...v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range capacity {
		v := q.DeepCopy()
		for _, r := range reserved {
			if rq, ok := r[name]; ok {
				v.Sub(rq)
			}
		}
		if v.Sign() < 0 {
			v = *resource.NewQuantity(0, q.Format)
		}
		out[name] = v
	}
	return out
}

// LimitsConfig turns a resource list into a cgroup's limits, as upstream
// enforces node allocatable and reservations: memory as a hard limit, CPU
// as shares (never a quota), process IDs as pids.max. With onlyCPU (the
// "-compressible" enforcement levels) memory and pids are left alone.
func LimitsConfig(rl v1.ResourceList, onlyCPU bool) ResourceConfig {
	var rc ResourceConfig
	if q, ok := rl[v1.ResourceCPU]; ok {
		s := uint64(criconfig.MilliCPUToShares(q.MilliValue()))
		rc.CPUShares = &s
	}
	if onlyCPU {
		return rc
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		m := q.Value()
		rc.Memory = &m
	}
	if q, ok := rl[PidResource]; ok {
		p := q.Value()
		rc.PidsLimit = &p
	}
	return rc
}
