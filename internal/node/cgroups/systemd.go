package cgroups

import (
	"fmt"
	"path"

	libcontainercgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/systemd"
)

// SystemdCgroups creates, updates and removes the kubelet's cgroups with the
// systemd driver: through systemd's D-Bus API, so that systemd knows (and
// keeps) kubepods.slice, the QoS slices and the pod slices, as upstream's
// cgroup manager does through libcontainer.
type SystemdCgroups interface {
	// Create starts n as a transient slice unit and applies rc.
	Create(n Name, rc ResourceConfig) error
	// Update applies rc to n's unit and files.
	Update(n Name, rc ResourceConfig) error
	// Destroy stops n's unit and removes what is left of its cgroup.
	Destroy(n Name) error
}

// libcontainerSystemd is SystemdCgroups with the systemd cgroup manager of
// github.com/opencontainers/cgroups (what upstream and runc use): Create is
// Apply(-1) (StartTransientUnit of the slice with Description, Wants= of
// the parent slice, the accounting properties and DefaultDependencies=no,
// then the controller directories) followed by Set (SetUnitProperties with
// CPUShares or CPUWeight, CPUQuotaPerSecUSec, CPUQuotaPeriodUSec,
// MemoryLimit or MemoryMax and TasksMax, then the same values written to
// the cgroup files); Destroy is StopUnit and the removal of the
// directories. It finds systemd as libcontainer does: the system bus
// (DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket), else
// /run/systemd/private.
type libcontainerSystemd struct {
	v2 bool
}

var _ SystemdCgroups = libcontainerSystemd{}

// NewSystemdCgroups is the systemd driver's SystemdCgroups for a cgroup
// version.
func NewSystemdCgroups(v Version) SystemdCgroups { return libcontainerSystemd{v2: v == V2} }

type libcontainerManager interface {
	Apply(pid int) error
	Set(r *libcontainercgroups.Resources) error
	Destroy() error
}

func (s libcontainerSystemd) manager(cg *libcontainercgroups.Cgroup) (libcontainerManager, error) {
	if s.v2 {
		return systemd.NewUnifiedManager(cg, "")
	}
	return systemd.NewLegacyManager(cg, nil)
}

func (s libcontainerSystemd) Create(n Name, rc ResourceConfig) error {
	cg := LibcontainerCgroup(n, &rc, s.v2)
	m, err := s.manager(cg)
	if err != nil {
		return fmt.Errorf("systemd cgroup manager for %s: %w", cg.Name, err)
	}
	// Apply(-1) creates the unit and its directories without moving a
	// process in; Set then applies the limits, as upstream's Create.
	if err := m.Apply(-1); err != nil {
		return fmt.Errorf("start slice %s: %w", cg.Name, err)
	}
	if err := m.Set(cg.Resources); err != nil {
		return fmt.Errorf("set slice %s: %w", cg.Name, err)
	}
	return nil
}

func (s libcontainerSystemd) Update(n Name, rc ResourceConfig) error {
	cg := LibcontainerCgroup(n, &rc, s.v2)
	m, err := s.manager(cg)
	if err != nil {
		return fmt.Errorf("systemd cgroup manager for %s: %w", cg.Name, err)
	}
	if err := m.Set(cg.Resources); err != nil {
		return fmt.Errorf("set slice %s: %w", cg.Name, err)
	}
	return nil
}

func (s libcontainerSystemd) Destroy(n Name) error {
	cg := LibcontainerCgroup(n, nil, s.v2)
	m, err := s.manager(cg)
	if err != nil {
		return fmt.Errorf("systemd cgroup manager for %s: %w", cg.Name, err)
	}
	if err := m.Destroy(); err != nil {
		return fmt.Errorf("unable to destroy cgroup paths for cgroup %v : %w", n, err)
	}
	return nil
}

// LibcontainerCgroup is the libcontainer configuration of n with the
// systemd driver, as upstream's libctCgroupConfig builds it: the slice
// unit's Name ("kubepods-burstable-pod<uid>.slice", dashes inside a
// component escaped to underscores) and its Parent slice ("-.slice" for a
// top-level one), and rc as toResources converts it (nil: no resources,
// for Destroy). Pure.
func LibcontainerCgroup(n Name, rc *ResourceConfig, v2 bool) *libcontainercgroups.Cgroup {
	dir, base := path.Split(n.Systemd())
	parent := path.Base(dir)
	if dir == "/" {
		parent = "-.slice"
	}
	cg := &libcontainercgroups.Cgroup{Systemd: true, Name: base, Parent: parent, Resources: &libcontainercgroups.Resources{}}
	if rc != nil {
		cg.Resources = libcontainerResources(*rc, v2)
	}
	return cg
}

// libcontainerResources is upstream's toResources: devices and the freezer
// are left alone (SkipDevices, SkipFreezeOnSet); on cgroup v2 the shares
// become a weight with upstream's getCPUWeight.
func libcontainerResources(rc ResourceConfig, v2 bool) *libcontainercgroups.Resources {
	r := &libcontainercgroups.Resources{SkipDevices: true, SkipFreezeOnSet: true}
	if rc.Memory != nil {
		r.Memory = *rc.Memory
	}
	if rc.CPUShares != nil {
		if v2 {
			r.CpuWeight = CPUWeight(*rc.CPUShares)
		} else {
			r.CpuShares = *rc.CPUShares
		}
	}
	if rc.CPUQuota != nil {
		r.CpuQuota = *rc.CPUQuota
	}
	if rc.CPUPeriod != nil {
		r.CpuPeriod = *rc.CPUPeriod
	}
	if rc.PidsLimit != nil {
		limit := *rc.PidsLimit
		r.PidsLimit = &limit
	}
	return r
}

// CPUWeight is upstream's getCPUWeight: cpu.shares [2, 262144] mapped
// linearly onto cpu.weight [1, 10000]. (Upstream's cgroup manager uses
// this for the kubelet's own cgroups on v2; the OCI runtimes use a
// different curve for containers, see SharesToWeight.)
func CPUWeight(shares uint64) uint64 {
	if shares >= maxShares {
		return maxWeight
	}
	if shares < 2 {
		shares = 2 // upstream's formula underflows below 2
	}
	return 1 + ((shares-2)*9999)/262142
}
