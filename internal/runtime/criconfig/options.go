package criconfig

import (
	"context"
	"errors"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Defaults used when the matching Options field is empty.
const (
	DefaultPodLogsDir         = "/var/log/pods"
	DefaultSeccompProfileRoot = "/var/lib/kubelet/seccomp"
	DefaultHostsPath          = "/etc/hosts"
	// DefaultCPUCFSQuotaPeriod is the CFS period in microseconds (100ms).
	DefaultCPUCFSQuotaPeriod int64 = 100000
)

// Swap behaviours, as KubeletConfiguration.memorySwap.swapBehavior names them.
const (
	SwapNoSwap      = "NoSwap"
	SwapLimitedSwap = "LimitedSwap"
)

// Options is the node-level configuration the translation needs. The zero
// value works for a standalone kubelet with no cluster DNS.
type Options struct {
	// NodeName is used for spec.nodeName when the pod has none.
	NodeName string
	// PodLogsDir is the root of pod log dirs; "" means DefaultPodLogsDir.
	PodLogsDir string
	// ClusterDNS and ClusterDomain are KubeletConfiguration.clusterDNS and
	// clusterDomain.
	ClusterDNS    []string
	ClusterDomain string
	// ResolvConf is the host resolv.conf path; "" means none (pods with the
	// Default policy then resolve through a loopback nameserver).
	ResolvConf string
	// ReadFile reads host files (resolv.conf, /etc/hosts); nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
	// HostsPath is the node's hosts file, copied for hostNetwork pods; "" means
	// DefaultHostsPath.
	HostsPath string
	// HostIPs are the node's addresses, preferred family first: the fallback
	// for status.hostIP(s), the family of loopback DNS, and the order of pod IPs.
	HostIPs []string
	// MachineMemoryBytes feeds the Burstable OOM score; it and the other
	// Machine* values stand in for a missing limit in resourceFieldRef when
	// NodeAllocatable is nil or does not know the resource.
	MachineMemoryBytes           int64
	MachineCPUMilli              int64
	MachineEphemeralStorageBytes int64
	// NodeAllocatable is the node's allocatable resources: what a missing
	// limit in a resourceFieldRef reads as, as upstream. May be nil.
	NodeAllocatable func() v1.ResourceList
	// CgroupParent is the sandbox's cgroup parent, passed through (may be
	// ""); the runtime manager sets it per pod to the pod's cgroup.
	CgroupParent string
	// EnvSource resolves config maps, secrets and service variables; nil in
	// standalone mode, where config map and secret references are errors.
	EnvSource EnvSource

	// DisableCPUCFSQuota is --cpu-cfs-quota=false: no CPU quota is set.
	DisableCPUCFSQuota bool
	// CPUCFSQuotaPeriod in microseconds; 0 means DefaultCPUCFSQuotaPeriod.
	CPUCFSQuotaPeriod int64
	// CgroupV2 says the node runs the unified cgroup hierarchy.
	CgroupV2 bool
	// SingleProcessOOMKill keeps the kernel from killing a container's whole
	// cgroup on OOM (cgroup v2 only; false sets memory.oom.group=1).
	SingleProcessOOMKill bool
	// HugePageSizes the host supports ("2MB", "1GB"); each gets a limit,
	// 0 unless the container asks for that size.
	HugePageSizes []string
	// SwapControllerAvailable says the memory cgroup controls swap.
	SwapControllerAvailable bool
	// MemorySwapBehavior is SwapNoSwap ("" too) or SwapLimitedSwap.
	MemorySwapBehavior string
	// SwapCapacityBytes is the node's swap, shared out under LimitedSwap.
	SwapCapacityBytes int64

	// SeccompProfileRoot holds Localhost seccomp profiles; "" means
	// DefaultSeccompProfileRoot.
	SeccompProfileRoot string
	// SeccompDefault runs containers without a profile as RuntimeDefault
	// instead of Unconfined.
	SeccompDefault bool
	// UserNamespace returns the mappings for a pod with hostUsers=false; nil
	// means such pods are refused.
	UserNamespace func(pod *v1.Pod) (*runtimeapi.UserNamespace, error)
}

// EnvSource resolves configMap/secret references and service variables in
// cluster mode. A missing object is reported with an error for which
// k8s.io/apimachinery/pkg/api/errors.IsNotFound is true.
type EnvSource interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// ServiceEnv returns the service link variables (FOO_SERVICE_HOST, ...)
	// for pods of namespace.
	ServiceEnv(ctx context.Context, namespace string, enableServiceLinks bool) (map[string]string, error)
}

// ErrContainerConfig is wrapped by every ContainerConfig error; the caller
// reports it as the CreateContainerConfigError waiting reason. The error's
// message is the underlying cause alone.
var ErrContainerConfig = errors.New("CreateContainerConfigError")

// configError marks err as a container config error without changing its text.
type configError struct{ err error }

func (e *configError) Error() string   { return e.err.Error() }
func (e *configError) Unwrap() []error { return []error{ErrContainerConfig, e.err} }

// Event reasons of the warnings SandboxConfig returns.
const (
	ReasonMissingClusterDNS = "MissingClusterDNS"
	ReasonDNSConfigForming  = "DNSConfigForming"
)

// Warning is something the caller should tell the user about, as a Warning
// event on the pod, while going ahead with the config.
type Warning struct {
	Reason  string
	Message string
}

func (o *Options) readFile(path string) ([]byte, error) {
	if o.ReadFile != nil {
		return o.ReadFile(path)
	}
	return os.ReadFile(path)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
