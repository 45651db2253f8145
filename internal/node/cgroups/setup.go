package cgroups

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
)

// RuntimeConfigClient is the part of the CRI runtime service asked for
// its cgroup driver.
type RuntimeConfigClient interface {
	RuntimeConfig(ctx context.Context, in *runtimeapi.RuntimeConfigRequest, opts ...grpc.CallOption) (*runtimeapi.RuntimeConfigResponse, error)
}

var _ RuntimeConfigClient = (runtimeapi.RuntimeServiceClient)(nil)

// cgroupV1Message is upstream's wording for running on cgroup v1.
const cgroupV1Message = "cgroup v1 support is unsupported and will be removed in a future release"

// SetupConfig is the kubelet configuration of its cgroups, as Setup reads it.
type SetupConfig struct {
	Runtime RuntimeConfigClient // required: asked for its cgroup driver
	// Driver is cgroupDriver ("" means cgroupfs).
	Driver Driver
	// FailCgroupV1 refuses a cgroup v1 host (failCgroupV1, true upstream).
	FailCgroupV1 bool
	// CgroupsPerQOS, CgroupRoot, EnforceNodeAllocatable, the reserved
	// cgroups and Pod are as in Config.
	CgroupsPerQOS                            bool
	CgroupRoot                               string
	EnforceNodeAllocatable                   []string
	SystemReservedCgroup, KubeReservedCgroup string
	SystemReserved, KubeReserved             v1.ResourceList
	Pod                                      PodOptions
	// Machine gives the node's capacity.
	Machine hostinfo.Machine
	// Layout is the host's cgroup layout, read once at start-up
	// (hostinfo.Host.Cgroups); LayoutErr when the host has no usable
	// cgroups.
	Layout    hostinfo.Cgroups
	LayoutErr error
	// NodeName, Recorder and Clock are as in Config (required).
	NodeName string
	Recorder events.Recorder
	Clock    clock.Clock
	// SystemdRunning reports whether systemd is the init system; nil means
	// the package's SystemdRunning.
	SystemdRunning func() bool
}

// Setup settles the cgroup driver (the runtime's, when it reports one, as
// upstream), checks that this host's cgroups are usable as configured, and
// returns the started Manager. Any error means the kubelet cannot run.
func Setup(ctx context.Context, cfg SetupConfig) (*Manager, error) {
	if cfg.SystemdRunning == nil {
		cfg.SystemdRunning = SystemdRunning
	}
	configured := cfg.Driver
	if configured == "" {
		configured = DriverCgroupfs
	}
	driver := RuntimeDriver(ctx, cfg.Runtime, configured)
	if driver == DriverSystemd && !cfg.SystemdRunning() {
		return nil, fmt.Errorf("cgroupDriver is %q but systemd is not running on this machine (no /run/systemd/system): use cgroupDriver: cgroupfs, and the same driver in the container runtime", driver)
	}
	var fs *FS
	detectErr := cfg.LayoutErr
	if detectErr == nil {
		fs = NewFS(cfg.Layout, driver)
	}
	if detectErr == nil && fs.Version == V1 {
		if cfg.FailCgroupV1 {
			return nil, fmt.Errorf("failed to validate kubelet configuration, error: kubelet is configured to not run on a host using cgroup v1. %s (set failCgroupV1: false to run on it anyway)", cgroupV1Message)
		}
		klog.InfoS("Running on cgroup v1 because failCgroupV1 is false; " + cgroupV1Message)
		cfg.Recorder.Eventf(nodestatus.NodeRef(cfg.NodeName), v1.EventTypeWarning, ReasonCgroupV1, "%s", cgroupV1Message)
	}
	c := Config{
		CgroupsPerQOS: cfg.CgroupsPerQOS, CgroupRoot: cfg.CgroupRoot, Pod: cfg.Pod,
		EnforceNodeAllocatable: cfg.EnforceNodeAllocatable,
		SystemReservedCgroup:   cfg.SystemReservedCgroup, KubeReservedCgroup: cfg.KubeReservedCgroup,
		NodeName: cfg.NodeName, Recorder: cfg.Recorder, Clock: cfg.Clock,
	}
	if c.CgroupsPerQOS {
		if c.CgroupRoot == "" {
			klog.InfoS("cgroupsPerQOS enabled, but cgroupRoot was not specified; defaulting to /")
			c.CgroupRoot = "/"
		}
		if detectErr != nil {
			return nil, fmt.Errorf("cgroupsPerQOS needs cgroups: %w", detectErr)
		}
		c.FS = fs
		c.Capacity = Capacity(cfg.Machine)
		c.SystemReserved, c.KubeReserved = cfg.SystemReserved, cfg.KubeReserved
	}
	m, err := New(c)
	if err != nil {
		return nil, err
	}
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("failed to start ContainerManager: %w", err)
	}
	return m, nil
}

// CgroupV2 reports whether the pod cgroups are on the unified hierarchy.
func (m *Manager) CgroupV2() bool { return m.cfg.FS != nil && m.cfg.FS.Version == V2 }

// RuntimeDriver asks the runtime for its cgroup driver (CRI RuntimeConfig);
// a runtime that does not say leaves the configured one.
func RuntimeDriver(ctx context.Context, rs RuntimeConfigClient, configured Driver) Driver {
	resp, err := rs.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			klog.InfoS("CRI implementation should be updated to support RuntimeConfig. Falling back to using cgroupDriver from kubelet config.", "cgroupDriver", configured)
		} else {
			klog.InfoS("Cannot get the cgroup driver from the runtime; using the configured one", "cgroupDriver", configured, "err", err)
		}
		return configured
	}
	var got Driver
	switch resp.GetLinux().GetCgroupDriver() {
	case runtimeapi.CgroupDriver_SYSTEMD:
		got = DriverSystemd
	case runtimeapi.CgroupDriver_CGROUPFS:
		got = DriverCgroupfs
	default:
		return configured
	}
	if got != configured {
		klog.InfoS("Using cgroup driver setting received from the CRI runtime; the configured cgroupDriver is ignored", "cgroupDriver", got, "configured", configured)
	}
	return got
}

// Capacity is the node capacity kubepods is sized from: CPUs, memory and,
// when known, PidResource. Pure.
func Capacity(machine hostinfo.Machine) v1.ResourceList {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(machine.NumCPU)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(machine.MemoryCapacity, resource.BinarySI),
	}
	if machine.MaxPIDs > 0 {
		c[PidResource] = *resource.NewQuantity(machine.MaxPIDs, resource.DecimalSI)
	}
	return c
}
