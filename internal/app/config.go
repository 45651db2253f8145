package app

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/node/containergc"
	"github.com/seed-kubelet/kubelet/internal/node/eviction"
	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/node/imagegc"
	"github.com/seed-kubelet/kubelet/internal/node/logrotate"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// This file turns the kubelet's configuration into the settings of each
// component; it decides nothing else.

// reserved are systemReserved and kubeReserved, parsed.
type reserved struct {
	system, kube v1.ResourceList
}

func parseReserved(cfg *kubeletconfig.KubeletConfiguration) (reserved, error) {
	var r reserved
	var err error
	if r.system, err = resourceList(cfg.SystemReserved); err != nil {
		return r, fmt.Errorf("systemReserved: %w", err)
	}
	if r.kube, err = resourceList(cfg.KubeReserved); err != nil {
		return r, fmt.Errorf("kubeReserved: %w", err)
	}
	return r, nil
}

func resourceList(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, v, err)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

// nodeStaticInputs are the node status inputs that do not change while
// the kubelet runs.
func nodeStaticInputs(cfg *kubeletconfig.KubeletConfiguration, flags options.KubeletFlags, host hostInfo,
	machine hostinfo.Machine, res reserved, runtimeVersion string) nodestatus.Inputs {
	hostname, _ := os.Hostname()
	if flags.HostnameOverride != "" {
		hostname = host.nodeName
	}
	maxImages := int32(50)
	if cfg.NodeStatusMaxImages != nil {
		maxImages = *cfg.NodeStatusMaxImages
	}
	return nodestatus.Inputs{
		NodeName: host.nodeName, Hostname: hostname, NodeIPs: host.ips, Machine: machine,
		RuntimeVersion: runtimeVersion, KubeletVersion: options.Version, MaxImages: maxImages,
		MaxPods: cfg.MaxPods, PodsPerCore: cfg.PodsPerCore, SystemReserved: res.system, KubeReserved: res.kube,
		EvictionHard: cfg.EvictionHard, KubeletPort: cfg.Port, Labels: flags.NodeLabels, Taints: cfg.RegisterWithTaints,
		ProviderID: cfg.ProviderID, ControllerAttachDetach: derefBool(cfg.EnableControllerAttachDetach, true),
		NodeIPFlag: splitComma(flags.NodeIP), ExternalCloudProvider: flags.CloudProvider == nodestatus.CloudProviderExternal,
	}
}

// cgroupSettings is the container manager's part of the configuration.
func cgroupSettings(cfg *kubeletconfig.KubeletConfiguration, machine hostinfo.Machine, res reserved) cgroups.SetupConfig {
	c := cgroups.SetupConfig{
		Driver: cgroups.Driver(cfg.CgroupDriver), FailCgroupV1: derefBool(cfg.FailCgroupV1, true),
		CgroupsPerQOS: derefBool(cfg.CgroupsPerQOS, true), CgroupRoot: cfg.CgroupRoot,
		EnforceNodeAllocatable: cfg.EnforceNodeAllocatable,
		SystemReservedCgroup:   cfg.SystemReservedCgroup, KubeReservedCgroup: cfg.KubeReservedCgroup,
		SystemReserved: res.system, KubeReserved: res.kube, Machine: machine,
		Pod: cgroups.PodOptions{EnforceCPULimits: derefBool(cfg.CPUCFSQuota, true)},
	}
	if cfg.CPUCFSQuotaPeriod != nil {
		c.Pod.CPUPeriod = uint64(cfg.CPUCFSQuotaPeriod.Microseconds())
	}
	if cfg.PodPidsLimit != nil {
		c.Pod.PodPidsLimit = *cfg.PodPidsLimit
	}
	return c
}

// criOptions are the settings of the pod → CRI translation.
func criOptions(cfg *kubeletconfig.KubeletConfiguration, rootDir string, host hostInfo, cgroupV2 bool) criconfig.Options {
	o := criconfig.Options{
		NodeName: host.nodeName, PodLogsDir: cfg.PodLogsDir, ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain,
		ResolvConf: derefString(cfg.ResolverConfig), MachineMemoryBytes: host.machine.MemoryCapacity, MachineCPUMilli: int64(host.machine.NumCPU) * 1000,
		HostIPs: host.ips, DisableCPUCFSQuota: !derefBool(cfg.CPUCFSQuota, true), CgroupV2: cgroupV2,
		// seccompDefault, and Localhost profiles below <root-dir>/seccomp, as upstream.
		SeccompDefault: derefBool(cfg.SeccompDefault, false), SeccompProfileRoot: filepath.Join(rootDir, "seccomp"),
		// memorySwap: per-container swap limits through the CRI, as upstream.
		SwapControllerAvailable: host.swapController, MemorySwapBehavior: cfg.MemorySwap.SwapBehavior,
		SwapCapacityBytes: host.machine.SwapCapacity,
	}
	if cfg.CPUCFSQuotaPeriod != nil {
		o.CPUCFSQuotaPeriod = cfg.CPUCFSQuotaPeriod.Microseconds()
	}
	return o
}

// logRotationSettings are containerLogMaxSize, containerLogMaxFiles,
// containerLogMaxWorkers and containerLogMonitorInterval.
func logRotationSettings(cfg *kubeletconfig.KubeletConfiguration) (logrotate.Config, error) {
	q, err := resource.ParseQuantity(cfg.ContainerLogMaxSize)
	if err != nil {
		return logrotate.Config{}, fmt.Errorf("failed to parse container log max size %q: %w", cfg.ContainerLogMaxSize, err)
	}
	maxSize, ok := q.AsInt64()
	if !ok {
		return logrotate.Config{}, fmt.Errorf("invalid container log max size %q", cfg.ContainerLogMaxSize)
	}
	return logrotate.Config{
		Policy:  logrotate.Policy{MaxSize: maxSize, MaxFiles: int(derefInt32(cfg.ContainerLogMaxFiles))},
		Workers: int(derefInt32(cfg.ContainerLogMaxWorkers)), Interval: cfg.ContainerLogMonitorInterval.Duration,
	}, nil
}

// imageGCPolicy is the policy of the image GC fields.
func imageGCPolicy(cfg *kubeletconfig.KubeletConfiguration) imagegc.Policy {
	return imagegc.Policy{
		HighThresholdPercent: int(derefInt32(cfg.ImageGCHighThresholdPercent)),
		LowThresholdPercent:  int(derefInt32(cfg.ImageGCLowThresholdPercent)),
		MinAge:               cfg.ImageMinimumGCAge.Duration,
		MaxAge:               cfg.ImageMaximumGCAge.Duration,
	}
}

// containerGCPolicy is the policy of the container GC flags.
func containerGCPolicy(f options.KubeletFlags) containergc.Policy {
	return containergc.Policy{
		MinAge: f.MinimumGCAge, MaxPerPodContainer: int(f.MaxPerPodContainerCount), MaxContainers: int(f.MaxContainerCount),
	}
}

// evictionSettings are the eviction manager's thresholds and periods.
func evictionSettings(cfg *kubeletconfig.KubeletConfiguration, host hostInfo) (eviction.Config, error) {
	thresholds, ignored, err := evictionapi.ParseThresholds(evictionapi.ThresholdConfig{
		Hard: cfg.EvictionHard, Soft: cfg.EvictionSoft, SoftGracePeriod: cfg.EvictionSoftGracePeriod,
		MinimumReclaim: cfg.EvictionMinimumReclaim, EnforceNodeAllocatable: cfg.EnforceNodeAllocatable,
	})
	if err != nil {
		return eviction.Config{}, fmt.Errorf("eviction thresholds: %w", err)
	}
	for _, s := range ignored {
		klog.InfoS("Eviction threshold ignored: the container filesystem follows the nodefs and imagefs thresholds", "signal", s)
	}
	return eviction.Config{
		// localStorageCapacityIsolation: emptyDir sizeLimits and
		// ephemeral-storage limits evict, as upstream (default true).
		LocalStorageCapacityIsolation: cfg.LocalStorageCapacityIsolation == nil || *cfg.LocalStorageCapacityIsolation,
		Thresholds:                    thresholds, PressureTransitionPeriod: cfg.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds: int64(cfg.EvictionMaxPodGracePeriod),
		KernelMemcgNotification:  cfg.KernelMemcgNotification, MemoryCgroup: host.cgroups.Mounts["memory"],
	}, nil
}

func derefInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func derefInt32AsFloat(p *int32) float32 { return float32(derefInt32(p)) }

func derefBool(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// cadvisorMachine describes the machine for /metrics/cadvisor.
func cadvisorMachine(m hostinfo.Machine) stats.Machine {
	topo := stats.ReadCPUTopology("/sys", m.NumCPU)
	return stats.Machine{
		MachineID: m.MachineID, SystemUUID: m.SystemUUID, BootID: m.BootID,
		KernelVersion: m.KernelVersion, OSImage: m.OSImage,
		Cores: m.NumCPU, PhysicalCores: topo.PhysicalCores, Sockets: topo.Sockets,
		MemoryBytes: m.MemoryCapacity, SwapBytes: m.SwapCapacity,
	}
}
