package stats

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// containerInput is everything gathered about one running container.
type containerInput struct {
	Container *runtimeapi.Container
	Stats     *runtimeapi.ContainerStats
	// UsageNanoCores is the CPU rate already resolved, nil when unknown.
	UsageNanoCores *uint64
	// RootfsFs sizes the writable layer's filesystem; nil if unknown.
	RootfsFs *fsInfo
	// Logs is the container's log directory usage; nil if it has none.
	Logs *diskUsage
}

// podInput is everything gathered about one pod.
type podInput struct {
	Sandbox    *runtimeapi.PodSandbox
	Containers []containerInput
	// CPU and Memory are pod-level figures (runtime sandbox stats or the
	// pod cgroup); nil means sum the containers'.
	CPU          *statsapi.CPUStats
	Memory       *statsapi.MemoryStats
	Network      *statsapi.NetworkStats
	ProcessCount *uint64
	// PodLogs are the files directly in the pod log directory, EtcHosts the
	// kubelet-managed hosts file; both nil when absent.
	PodLogs  *diskUsage
	EtcHosts *diskUsage
	// Volumes are the pod's measured volumes.
	Volumes []volumeInput
}

// assemblePod builds a pod's stats. nodeFs nil means CPU and memory only:
// no filesystems, network or process count.
func assemblePod(in podInput, nodeFs *fsInfo, now time.Time) statsapi.PodStats {
	md := in.Sandbox.GetMetadata()
	ps := statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()},
		StartTime:  metav1.NewTime(time.Unix(0, in.Sandbox.GetCreatedAt())),
		Containers: make([]statsapi.ContainerStats, 0, len(in.Containers)),
	}
	for _, c := range in.Containers {
		ps.Containers = append(ps.Containers, assembleContainer(c, nodeFs, now))
	}
	sort.Slice(ps.Containers, func(i, j int) bool { return ps.Containers[i].Name < ps.Containers[j].Name })

	ps.CPU, ps.Memory = in.CPU, in.Memory
	if ps.CPU == nil {
		ps.CPU = sumCPU(ps.Containers)
	}
	if ps.Memory == nil {
		ps.Memory = sumMemory(ps.Containers)
	}
	ps.Swap = sumSwap(ps.Containers)
	if nodeFs == nil {
		return ps
	}
	ps.Network = in.Network
	if in.ProcessCount != nil {
		ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: copyPtr(in.ProcessCount)}
	}
	ps.VolumeStats = volumeStats(in.Volumes)
	ps.EphemeralStorage = ephemeralStorage(ps.Containers, in.Volumes, in.PodLogs, in.EtcHosts, *nodeFs, now)
	return ps
}

// assembleContainer builds one container's stats from its CRI stats. As
// upstream does, CPU, memory and swap the runtime left out read as zero.
func assembleContainer(in containerInput, nodeFs *fsInfo, now time.Time) statsapi.ContainerStats {
	s := in.Stats
	cs := statsapi.ContainerStats{
		Name:      in.Container.GetMetadata().GetName(),
		StartTime: metav1.NewTime(time.Unix(0, in.Container.GetCreatedAt())),
	}
	if cpu := s.GetCpu(); cpu != nil {
		cs.CPU = &statsapi.CPUStats{
			Time:                 metav1.NewTime(sampleTime(cpu.GetTimestamp(), now)),
			UsageCoreNanoSeconds: criValue(cpu.GetUsageCoreNanoSeconds()),
			UsageNanoCores:       copyPtr(in.UsageNanoCores),
		}
	} else {
		cs.CPU = &statsapi.CPUStats{Time: metav1.NewTime(now), UsageCoreNanoSeconds: u64(0), UsageNanoCores: u64(0)}
	}
	if m := s.GetMemory(); m != nil {
		cs.Memory = criMemory(m, now)
	} else {
		cs.Memory = &statsapi.MemoryStats{Time: metav1.NewTime(now), UsageBytes: u64(0), WorkingSetBytes: u64(0), RSSBytes: u64(0)}
	}
	if sw := s.GetSwap(); sw != nil {
		cs.Swap = &statsapi.SwapStats{
			Time:               metav1.NewTime(sampleTime(sw.GetTimestamp(), now)),
			SwapUsageBytes:     criValue(sw.GetSwapUsageBytes()),
			SwapAvailableBytes: criValue(sw.GetSwapAvailableBytes()),
		}
	} else {
		cs.Swap = &statsapi.SwapStats{Time: metav1.NewTime(now), SwapUsageBytes: u64(0), SwapAvailableBytes: u64(0)}
	}
	if nodeFs == nil {
		return cs
	}
	cs.Rootfs = &statsapi.FsStats{Time: metav1.NewTime(now)}
	if in.RootfsFs != nil {
		cs.Rootfs = in.RootfsFs.capacityStats(now)
	}
	if wl := s.GetWritableLayer(); wl != nil {
		cs.Rootfs.Time = metav1.NewTime(sampleTime(wl.GetTimestamp(), now))
		cs.Rootfs.UsedBytes = criValue(wl.GetUsedBytes())
		cs.Rootfs.InodesUsed = criValue(wl.GetInodesUsed())
	}
	if in.Logs != nil {
		cs.Logs = nodeFs.capacityStats(now)
		cs.Logs.UsedBytes, cs.Logs.InodesUsed = u64(in.Logs.Bytes), u64(in.Logs.Inodes)
	}
	return cs
}

// criMemory converts CRI memory usage. A zero availableBytes is dropped:
// containerd sends zero for "no limit", which would read as "none left".
func criMemory(m *runtimeapi.MemoryUsage, now time.Time) *statsapi.MemoryStats {
	out := &statsapi.MemoryStats{
		Time:            metav1.NewTime(sampleTime(m.GetTimestamp(), now)),
		UsageBytes:      criValue(m.GetUsageBytes()),
		WorkingSetBytes: criValue(m.GetWorkingSetBytes()),
		RSSBytes:        criValue(m.GetRssBytes()),
		PageFaults:      criValue(m.GetPageFaults()),
		MajorPageFaults: criValue(m.GetMajorPageFaults()),
	}
	if a := m.GetAvailableBytes(); a != nil && a.GetValue() > 0 {
		out.AvailableBytes = u64(a.GetValue())
	}
	return out
}

// criNetwork converts CRI network usage.
func criNetwork(n *runtimeapi.NetworkUsage, now time.Time) *statsapi.NetworkStats {
	conv := func(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
		return statsapi.InterfaceStats{
			Name: i.GetName(), RxBytes: criValue(i.GetRxBytes()), RxErrors: criValue(i.GetRxErrors()),
			TxBytes: criValue(i.GetTxBytes()), TxErrors: criValue(i.GetTxErrors()),
		}
	}
	out := &statsapi.NetworkStats{Time: metav1.NewTime(sampleTime(n.GetTimestamp(), now))}
	if d := n.GetDefaultInterface(); d != nil {
		out.InterfaceStats = conv(d)
	}
	for _, i := range n.GetInterfaces() {
		out.Interfaces = append(out.Interfaces, conv(i))
	}
	return out
}

func criValue(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return u64(v.GetValue())
}

// sumCPU adds the containers' CPU; the rate is nil only when no container
// has one.
func sumCPU(cs []statsapi.ContainerStats) *statsapi.CPUStats {
	var out *statsapi.CPUStats
	for _, c := range cs {
		if c.CPU == nil {
			continue
		}
		if out == nil {
			out = &statsapi.CPUStats{}
		}
		out.Time = later(out.Time, c.CPU.Time)
		out.UsageCoreNanoSeconds = addPtr(out.UsageCoreNanoSeconds, c.CPU.UsageCoreNanoSeconds)
		out.UsageNanoCores = addPtr(out.UsageNanoCores, c.CPU.UsageNanoCores)
	}
	return out
}

// sumMemory adds the containers' memory figures.
func sumMemory(cs []statsapi.ContainerStats) *statsapi.MemoryStats {
	var out *statsapi.MemoryStats
	for _, c := range cs {
		m := c.Memory
		if m == nil {
			continue
		}
		if out == nil {
			out = &statsapi.MemoryStats{}
		}
		out.Time = later(out.Time, m.Time)
		out.AvailableBytes = addPtr(out.AvailableBytes, m.AvailableBytes)
		out.UsageBytes = addPtr(out.UsageBytes, m.UsageBytes)
		out.WorkingSetBytes = addPtr(out.WorkingSetBytes, m.WorkingSetBytes)
		out.RSSBytes = addPtr(out.RSSBytes, m.RSSBytes)
		out.PageFaults = addPtr(out.PageFaults, m.PageFaults)
		out.MajorPageFaults = addPtr(out.MajorPageFaults, m.MajorPageFaults)
	}
	return out
}

// sumSwap adds the containers' swap (the CRI has no pod-level swap).
func sumSwap(cs []statsapi.ContainerStats) *statsapi.SwapStats {
	var out *statsapi.SwapStats
	for _, c := range cs {
		if c.Swap == nil {
			continue
		}
		if out == nil {
			out = &statsapi.SwapStats{}
		}
		out.Time = later(out.Time, c.Swap.Time)
		out.SwapUsageBytes = addPtr(out.SwapUsageBytes, c.Swap.SwapUsageBytes)
		out.SwapAvailableBytes = addPtr(out.SwapAvailableBytes, c.Swap.SwapAvailableBytes)
	}
	return out
}

// ephemeralStorage is the pod's use of the nodefs, as upstream adds it
// up: its containers' writable layers and logs, its local ephemeral
// volumes (disk emptyDir, configMap), the pod-level log files and
// etc-hosts.
func ephemeralStorage(cs []statsapi.ContainerStats, vols []volumeInput, podLogs, etcHosts *diskUsage, nodeFs fsInfo, now time.Time) *statsapi.FsStats {
	out := nodeFs.capacityStats(now)
	for _, c := range cs {
		if c.Rootfs != nil {
			out.UsedBytes = addPtr(out.UsedBytes, c.Rootfs.UsedBytes)
			out.InodesUsed = addPtr(out.InodesUsed, c.Rootfs.InodesUsed)
		}
		if c.Logs != nil {
			out.UsedBytes = addPtr(out.UsedBytes, c.Logs.UsedBytes)
			out.InodesUsed = addPtr(out.InodesUsed, c.Logs.InodesUsed)
		}
	}
	for _, v := range vols {
		if v.Local {
			out.UsedBytes = addPtr(out.UsedBytes, u64(v.Sample.Usage.Bytes))
			out.InodesUsed = addPtr(out.InodesUsed, u64(v.Sample.Usage.Inodes))
		}
	}
	for _, u := range []*diskUsage{podLogs, etcHosts} {
		if u != nil {
			out.UsedBytes = addPtr(out.UsedBytes, u64(u.Bytes))
			out.InodesUsed = addPtr(out.InodesUsed, u64(u.Inodes))
		}
	}
	return out
}

// addPtr adds two optional values; nil only when both are.
func addPtr(a, b *uint64) *uint64 {
	switch {
	case a == nil:
		return copyPtr(b)
	case b == nil:
		return a
	}
	return u64(*a + *b)
}

func later(a, b metav1.Time) metav1.Time {
	if b.After(a.Time) {
		return b
	}
	return a
}

// sortPods orders pods by namespace then name, for stable output.
func sortPods(ps []statsapi.PodStats) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i].PodRef, ps[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}
