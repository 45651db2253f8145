package criconfig

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/qos"
)

// CPU share and quota bounds of the Linux CFS scheduler.
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	milliCPUPerCPU = 1000
	minQuota       = 1000 // 1ms
)

// Unified (cgroup v2) keys the kubelet sets.
const (
	unifiedOOMGroup = "memory.oom.group"
	unifiedSwapMax  = "memory.swap.max"
)

// MilliCPUToShares converts a CPU request to cpu.shares: 1024 per CPU,
// clamped to [2, 262144]; no request gives the minimum.
func MilliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUPerCPU
	return min(max(shares, minShares), maxShares)
}

// MilliCPUToQuota converts a CPU limit to a CFS quota for period
// microseconds; no limit gives 0 (unlimited), any limit at least 1ms.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/milliCPUPerCPU, minQuota)
}

// linuxResources is the cgroup translation shared by containers, sandboxes
// and overhead: shares from the request (or the limit when no request is
// given), a quota from the limit, the memory limit.
func (o *Options) linuxResources(cpuRequest *resource.Quantity, cpuLimit, memoryLimit resource.Quantity) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	if cpuRequest == nil {
		r.CpuShares = MilliCPUToShares(cpuLimit.MilliValue())
	} else {
		r.CpuShares = MilliCPUToShares(cpuRequest.MilliValue())
	}
	if m := memoryLimit.Value(); m != 0 {
		r.MemoryLimitInBytes = m
	}
	if !o.DisableCPUCFSQuota {
		period := o.CPUCFSQuotaPeriod
		if period == 0 {
			period = DefaultCPUCFSQuotaPeriod
		}
		r.CpuPeriod = period
		r.CpuQuota = MilliCPUToQuota(cpuLimit.MilliValue(), period)
	}
	if o.CgroupV2 && !o.SingleProcessOOMKill {
		r.Unified = map[string]string{unifiedOOMGroup: "1"}
	}
	return r
}

// ContainerResources is the cgroup config of container c of pod, as its
// CreateContainer request carries it; an in-place resize sends it with
// UpdateContainerResources.
func (o *Options) ContainerResources(pod *v1.Pod, c *v1.Container) (*runtimeapi.LinuxContainerResources, error) {
	return o.containerResources(pod, c)
}

// LimitedSwap reports whether container c of pod is given swap
// (LimitedSwap on cgroup v2); an in-place resize of its memory request is
// then infeasible, as upstream.
func (o *Options) LimitedSwap(pod *v1.Pod, c *v1.Container) bool {
	return o.SwapControllerAvailable && o.CgroupV2 && o.limitedSwap(pod, c)
}

// containerResources is the container's cgroup config. A container without
// its own cpu or memory limit inherits the pod-level one.
func (o *Options) containerResources(pod *v1.Pod, c *v1.Container) (*runtimeapi.LinuxContainerResources, error) {
	var cpuRequest *resource.Quantity
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	cpuLimit, memLimit := c.Resources.Limits[v1.ResourceCPU], c.Resources.Limits[v1.ResourceMemory]
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits[v1.ResourceCPU]
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits[v1.ResourceMemory]
		}
	}
	r := o.linuxResources(cpuRequest, cpuLimit, memLimit)
	r.OomScoreAdj = int64(qos.ContainerOOMScoreAdjust(pod, c, o.MachineMemoryBytes))
	hp, err := o.hugepageLimits(c.Resources.Limits)
	if err != nil {
		return nil, err
	}
	r.HugepageLimits = hp
	o.applySwap(r, pod, c)
	return r, nil
}

// sandboxResources describe the whole pod (overhead excluded) for runtimes
// that size a VM or similar.
func (o *Options) sandboxResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	req, lim := resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
	var cpuRequest *resource.Quantity
	if q, ok := req[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	return o.linuxResources(cpuRequest, lim[v1.ResourceCPU], lim[v1.ResourceMemory])
}

// overheadResources treat spec.overhead as guaranteed: request == limit.
func (o *Options) overheadResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	if pod.Spec.Overhead == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	cpu := pod.Spec.Overhead[v1.ResourceCPU]
	return o.linuxResources(&cpu, cpu, pod.Spec.Overhead[v1.ResourceMemory])
}

// hugepageLimits gives every host page size a limit (0 unless requested),
// plus any requested size the host list lacks.
func (o *Options) hugepageLimits(limits v1.ResourceList) ([]*runtimeapi.HugepageLimit, error) {
	var out []*runtimeapi.HugepageLimit
	index := map[string]*runtimeapi.HugepageLimit{}
	for _, size := range o.HugePageSizes {
		l := &runtimeapi.HugepageLimit{PageSize: size}
		out = append(out, l)
		index[size] = l
	}
	for name, q := range limits {
		sizeName, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		pageSize, err := resource.ParseQuantity(sizeName)
		if err != nil {
			return nil, fmt.Errorf("huge page resource %s: %w", name, err)
		}
		size, err := HugePageSizeName(pageSize.Value())
		if err != nil {
			return nil, fmt.Errorf("huge page resource %s: %w", name, err)
		}
		if l, ok := index[size]; ok {
			l.Limit = uint64(q.Value())
			continue
		}
		l := &runtimeapi.HugepageLimit{PageSize: size, Limit: uint64(q.Value())}
		out = append(out, l)
		index[size] = l
	}
	return out, nil
}

// HugePageSizeName names a page size of the given bytes as the kernel's
// hugetlb cgroup files do: "2MB", "1GB", "64KB".
func HugePageSizeName(bytes int64) (string, error) {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	if bytes <= 0 {
		return "", fmt.Errorf("huge page size %d is not positive", bytes)
	}
	i := 0
	for bytes%1024 == 0 && i < len(units)-1 {
		bytes /= 1024
		i++
	}
	if bytes > 1024 && i < len(units)-1 {
		return "", fmt.Errorf("huge page size %d%s is not a whole number of a larger unit", bytes, units[i])
	}
	return strconv.FormatInt(bytes, 10) + units[i], nil
}

// applySwap keeps containers out of swap unless LimitedSwap grants a
// Burstable container a share proportional to its memory request.
func (o *Options) applySwap(r *runtimeapi.LinuxContainerResources, pod *v1.Pod, c *v1.Container) {
	if !o.SwapControllerAvailable {
		return
	}
	if !o.CgroupV2 {
		// memory+swap equal to memory: no swap beyond the memory limit.
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
		return
	}
	swap := int64(0)
	if o.limitedSwap(pod, c) {
		swap = int64(float64(c.Resources.Requests.Memory().Value()) / float64(o.MachineMemoryBytes) * float64(o.SwapCapacityBytes))
	}
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[unifiedSwapMax] = strconv.FormatInt(swap, 10)
}

func (o *Options) limitedSwap(pod *v1.Pod, c *v1.Container) bool {
	if o.MemorySwapBehavior != SwapLimitedSwap || podutil.IsCriticalPod(pod) || qos.PodQOSClass(pod) != v1.PodQOSBurstable {
		return false
	}
	req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
	if req.IsZero() && lim.IsZero() || req.Cmp(*lim) == 0 {
		return false
	}
	return o.MachineMemoryBytes > 0 && req.Value() <= o.MachineMemoryBytes
}
