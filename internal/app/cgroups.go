package app

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
)

// cgroupDeps is what the container manager is built from.
type cgroupDeps struct {
	cfg        *kubeletconfig.KubeletConfiguration
	flags      options.KubeletFlags
	nodeName   string
	runtime    runtimeapi.RuntimeServiceClient
	recorder   events.Recorder
	clock      clock.Clock
	activePods func() []*v1.Pod
	// machine and layout (or layoutErr) are read once at start-up.
	machine   hostinfo.Machine
	layout    hostinfo.Cgroups
	layoutErr error
}

// startContainerManager settles the cgroup driver (the runtime's, when it
// reports one, as upstream), checks that the cgroups are usable, and builds
// the kubelet's cgroup hierarchy. Any error stops the kubelet.
func startContainerManager(ctx context.Context, d cgroupDeps) (*cgroups.Manager, *cgroups.FS, error) {
	cfg := d.cfg
	driver := cgroups.Driver(cfg.CgroupDriver)
	if driver == "" {
		driver = cgroups.DriverCgroupfs
	}
	driver = runtimeCgroupDriver(ctx, d.runtime, driver)
	if driver == cgroups.DriverSystemd && !cgroups.SystemdRunning() {
		return nil, nil, fmt.Errorf("cgroupDriver is %q but systemd is not running on this machine (no /run/systemd/system): use cgroupDriver: cgroupfs, and the same driver in the container runtime", driver)
	}
	if err := checkCgroupV1(cfg, d.layout, d.layoutErr, d.nodeName, d.recorder); err != nil {
		return nil, nil, err
	}
	perQOS := derefBool(cfg.CgroupsPerQOS, true)
	root := cfg.CgroupRoot
	if perQOS && root == "" {
		klog.InfoS("cgroupsPerQOS enabled, but cgroupRoot was not specified; defaulting to /")
		root = "/"
	}
	c := cgroups.Config{
		CgroupsPerQOS: perQOS, CgroupRoot: root, NodeName: d.nodeName, Recorder: d.recorder, Clock: d.clock,
		ActivePods:             d.activePods,
		EnforceNodeAllocatable: cfg.EnforceNodeAllocatable,
		SystemReservedCgroup:   cfg.SystemReservedCgroup, KubeReservedCgroup: cfg.KubeReservedCgroup,
		Pod: cgroups.PodOptions{
			EnforceCPULimits: derefBool(cfg.CPUCFSQuota, true),
		},
	}
	if cfg.CPUCFSQuotaPeriod != nil {
		c.Pod.CPUPeriod = uint64(cfg.CPUCFSQuotaPeriod.Microseconds())
	}
	if cfg.PodPidsLimit != nil {
		c.Pod.PodPidsLimit = *cfg.PodPidsLimit
	}
	var fs *cgroups.FS
	if perQOS {
		var err error
		if d.layoutErr != nil {
			return nil, nil, fmt.Errorf("cgroupsPerQOS needs cgroups: %w", d.layoutErr)
		}
		fs = cgroups.NewFS(d.layout, driver)
		c.FS = fs
		machine := d.machine
		c.Capacity = v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(int64(machine.NumCPU)*1000, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(machine.MemoryCapacity, resource.BinarySI),
		}
		if machine.MaxPIDs > 0 {
			c.Capacity[cgroups.PidResource] = *resource.NewQuantity(machine.MaxPIDs, resource.DecimalSI)
		}
		if c.SystemReserved, err = resourceList(cfg.SystemReserved); err != nil {
			return nil, nil, fmt.Errorf("systemReserved: %w", err)
		}
		if c.KubeReserved, err = resourceList(cfg.KubeReserved); err != nil {
			return nil, nil, fmt.Errorf("kubeReserved: %w", err)
		}
	}
	m, err := cgroups.New(c)
	if err != nil {
		return nil, nil, err
	}
	if err := m.Start(); err != nil {
		return nil, nil, fmt.Errorf("failed to start ContainerManager: %w", err)
	}
	return m, fs, nil
}

// runtimeCgroupDriver asks the runtime for its cgroup driver (CRI
// RuntimeConfig); runtimes that do not implement it leave the configured one.
func runtimeCgroupDriver(ctx context.Context, rs runtimeapi.RuntimeServiceClient, configured cgroups.Driver) cgroups.Driver {
	resp, err := rs.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			klog.InfoS("CRI implementation should be updated to support RuntimeConfig. Falling back to using cgroupDriver from kubelet config.", "cgroupDriver", configured)
		} else {
			klog.InfoS("Cannot get the cgroup driver from the runtime; using the configured one", "cgroupDriver", configured, "err", err)
		}
		return configured
	}
	var got cgroups.Driver
	switch resp.GetLinux().GetCgroupDriver() {
	case runtimeapi.CgroupDriver_SYSTEMD:
		got = cgroups.DriverSystemd
	case runtimeapi.CgroupDriver_CGROUPFS:
		got = cgroups.DriverCgroupfs
	default:
		return configured
	}
	if got != configured {
		klog.InfoS("Using cgroup driver setting received from the CRI runtime; the configured cgroupDriver is ignored", "cgroupDriver", got, "configured", configured)
	}
	return got
}

// startOOMWatcher reports the kernel's system OOM kills as node events.
func startOOMWatcher(ctx context.Context, nodeName string, recorder events.Recorder) error {
	w := &cgroups.OOMWatcher{NodeName: nodeName, Recorder: recorder}
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("failed to start OOM watcher: %w", err)
	}
	return nil
}

// activePods are the pods that hold node resources: every pod the kubelet
// runs except those whose worker is terminating or done.
func activePods(pods *podmanager.Manager, workers *podworkers.PodWorkers) []*v1.Pod {
	var states map[types.UID]podworkers.PodState
	if workers != nil {
		states = workers.States()
	}
	var out []*v1.Pod
	for _, p := range pods.List() {
		if s, ok := states[p.UID]; ok && s.State != podworkers.Syncing {
			continue
		}
		out = append(out, p)
	}
	return out
}

// cgroupV1Message is upstream's wording for running on cgroup v1.
const cgroupV1Message = "cgroup v1 support is unsupported and will be removed in a future release"

// checkCgroupV1 refuses a cgroup v1 host unless failCgroupV1 is false, as
// upstream's kubelet does since v1.35; allowed, it warns with a CgroupV1
// event on the Node.
func checkCgroupV1(cfg *kubeletconfig.KubeletConfiguration, layout hostinfo.Cgroups, layoutErr error, nodeName string, recorder events.Recorder) error {
	if layoutErr != nil || layout.Unified {
		return nil // no cgroups at all is reported where they are needed
	}
	if derefBool(cfg.FailCgroupV1, true) {
		return fmt.Errorf("failed to validate kubelet configuration, error: kubelet is configured to not run on a host using cgroup v1. %s (set failCgroupV1: false to run on it anyway)", cgroupV1Message)
	}
	klog.InfoS("Running on cgroup v1 because failCgroupV1 is false; " + cgroupV1Message)
	recorder.Eventf(nodestatus.NodeRef(nodeName), v1.EventTypeWarning, cgroups.ReasonCgroupV1, "%s", cgroupV1Message)
	return nil
}
