package cgroups

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/qos"
)

// Names of the kubelet's cgroups, as upstream.
const (
	NodeAllocatableCgroup = "kubepods"
	BurstableCgroup       = "burstable"
	BestEffortCgroup      = "besteffort"
	podCgroupPrefix       = "pod"
)

// enforceNodeAllocatable levels.
const (
	EnforcePods                       = "pods"
	EnforceSystemReserved             = "system-reserved"
	EnforceKubeReserved               = "kube-reserved"
	EnforceSystemReservedCompressible = "system-reserved-compressible"
	EnforceKubeReservedCompressible   = "kube-reserved-compressible"
	EnforceNone                       = "none"
)

// Event reasons upstream's container manager records on the Node.
const (
	ReasonSuccessfulNodeAllocatableEnforcement = "NodeAllocatableEnforced"
	ReasonFailedNodeAllocatableEnforcement     = "FailedNodeAllocatableEnforcement"
	// ReasonCgroupV1 warns that the node runs the deprecated cgroup v1.
	ReasonCgroupV1 = "CgroupV1"
)

// allocatableRetry is how often a failed kubepods update is retried (the
// pods may use more memory than the new limit until some are evicted).
const allocatableRetry = time.Minute

// Config is what a Manager needs.
type Config struct {
	// FS writes the cgroups. Required when CgroupsPerQOS is set.
	FS *FS
	// CgroupsPerQOS builds the kubepods/QoS/pod hierarchy; without it pods
	// go straight into CgroupRoot and nothing is enforced.
	CgroupsPerQOS bool
	// CgroupRoot is cgroupRoot as configured ("/" when empty with CgroupsPerQOS).
	CgroupRoot string
	// Pod are the node settings for pod cgroups.
	Pod PodOptions
	// Capacity is the node's capacity, with PidResource (the kernel's PID
	// limit) added for the kubepods pids.max.
	Capacity v1.ResourceList
	// SystemReserved and KubeReserved are the reservations.
	SystemReserved, KubeReserved v1.ResourceList
	// EnforceNodeAllocatable is the configured list of levels.
	EnforceNodeAllocatable []string
	// SystemReservedCgroup and KubeReservedCgroup name existing cgroups the
	// reservations are enforced on (cgroupfs paths).
	SystemReservedCgroup, KubeReservedCgroup string
	// NodeName names the Node events are recorded on.
	NodeName string
	// Recorder receives node events. Required.
	Recorder events.Recorder
	// Clock times retries. Required.
	Clock clock.Clock
}

// Manager owns the kubelet's cgroup hierarchy.
type Manager struct {
	cfg      Config
	root     Name // cgroupRoot
	kubepods Name

	mu              sync.Mutex
	allocatableDone bool
	nextAllocatable time.Time
}

// New validates cfg and returns a Manager; Start creates the hierarchy.
func New(cfg Config) (*Manager, error) {
	if cfg.Recorder == nil || cfg.Clock == nil {
		return nil, errors.New("cm: Recorder and Clock are required")
	}
	m := &Manager{cfg: cfg}
	if !cfg.CgroupsPerQOS {
		return m, nil
	}
	if cfg.FS == nil {
		return nil, errors.New("cm: FS is required with cgroupsPerQOS")
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/"
		m.cfg.CgroupRoot = "/"
	}
	m.root = ParseCgroupfs(cfg.CgroupRoot)
	m.kubepods = m.root.Child(NodeAllocatableCgroup)
	return m, nil
}

// NodeAllocatableCgroup is the path of the cgroup holding the pods as the
// driver lays it out ("/kubepods", or "/kubepods.slice" with systemd);
// "" without cgroupsPerQOS.
func (m *Manager) NodeAllocatableCgroup() string {
	if !m.cfg.CgroupsPerQOS {
		return ""
	}
	return m.cfg.FS.Driver.Path(m.kubepods)
}

// Enabled reports whether the kubelet manages pod cgroups.
func (m *Manager) Enabled() bool { return m.cfg.CgroupsPerQOS }

func (m *Manager) enforced(level string) bool {
	for _, l := range m.cfg.EnforceNodeAllocatable {
		if l == level {
			return true
		}
	}
	return false
}

// KubepodsConfig is what the kubepods cgroup holds: node allocatable when
// "pods" is enforced, else the whole capacity (the default CPU shares of a
// new cgroup would starve the pods).
func (m *Manager) KubepodsConfig() ResourceConfig {
	rl := m.cfg.Capacity
	if m.enforced(EnforcePods) {
		rl = NodeAllocatable(m.cfg.Capacity, m.cfg.SystemReserved, m.cfg.KubeReserved)
	}
	return LimitsConfig(rl, false)
}

// Start checks that cgroupRoot exists, creates kubepods and the QoS
// cgroups, and enforces node allocatable and the reserved cgroups as
// configured. An error means the kubelet cannot run pods as configured.
func (m *Manager) Start() error {
	if !m.cfg.CgroupsPerQOS {
		klog.InfoS("cgroupsPerQOS is false: pods run without the kubelet's cgroup hierarchy", "cgroupRoot", m.cfg.CgroupRoot)
		return nil
	}
	if missing := m.cfg.FS.Missing(m.root); len(missing) > 0 {
		return fmt.Errorf("invalid configuration: cgroupRoot %q does not exist: missing %s (create it, or choose another cgroupRoot)",
			m.cfg.CgroupRoot, strings.Join(missing, ", "))
	}
	klog.InfoS("Container manager verified cgroupRoot exists", "cgroupRoot", m.cfg.CgroupRoot, "cgroupDriver", m.cfg.FS.Driver,
		"cgroupVersion", m.cfg.FS.Version)
	kp := m.KubepodsConfig()
	if !m.cfg.FS.Exists(m.kubepods) {
		if err := m.cfg.FS.Create(m.kubepods, kp); err != nil {
			return fmt.Errorf("create the node allocatable cgroup %s: %w", m.cfg.FS.Driver.Path(m.kubepods), err)
		}
	}
	m.enforceAllocatable()
	// No pod is active yet: the sync loop sets the shares as it admits them.
	burstable, bestEffort := QOSConfigs(nil)
	for _, q := range []struct {
		name string
		rc   ResourceConfig
	}{{BurstableCgroup, burstable}, {BestEffortCgroup, bestEffort}} {
		n := m.kubepods.Child(q.name)
		if err := m.cfg.FS.Create(n, q.rc); err != nil {
			return fmt.Errorf("create the %s QoS cgroup %s: %w", q.name, m.cfg.FS.Driver.Path(n), err)
		}
	}
	for _, r := range []struct {
		level, compressible, cgroup, what, title string
		rl                                       v1.ResourceList
	}{
		{EnforceSystemReserved, EnforceSystemReservedCompressible, m.cfg.SystemReservedCgroup, "system reserved", "System Reserved", m.cfg.SystemReserved},
		{EnforceKubeReserved, EnforceKubeReservedCompressible, m.cfg.KubeReservedCgroup, "kube reserved", "Kube Reserved", m.cfg.KubeReserved},
	} {
		full, cpuOnly := m.enforced(r.level), m.enforced(r.compressible)
		if !full && !cpuOnly {
			continue
		}
		if err := m.enforceReserved(r.cgroup, r.rl, !full); err != nil {
			msg := fmt.Sprintf("Failed to enforce %s Cgroup Limits on %q: %v", r.title, r.cgroup, err)
			m.cfg.Recorder.Eventf(nodestatus.NodeRef(m.cfg.NodeName), v1.EventTypeWarning, ReasonFailedNodeAllocatableEnforcement, "%s", msg)
			return errors.New(msg)
		}
		m.cfg.Recorder.Eventf(nodestatus.NodeRef(m.cfg.NodeName), v1.EventTypeNormal, ReasonSuccessfulNodeAllocatableEnforcement,
			"Updated limits on %s cgroup %v", r.what, r.cgroup)
	}
	return nil
}

// enforceReserved writes a reservation onto an existing cgroup.
func (m *Manager) enforceReserved(cgroup string, rl v1.ResourceList, cpuOnly bool) error {
	n, err := m.cfg.FS.Driver.Parse(cgroup)
	if err != nil {
		return err
	}
	if missing := m.cfg.FS.Missing(n); len(missing) > 0 {
		return fmt.Errorf("cgroup does not exist: missing %s", strings.Join(missing, ", "))
	}
	rc := LimitsConfig(rl, cpuOnly)
	klog.V(2).InfoS("Enforcing reservation on cgroup", "cgroup", cgroup, "limits", rl, "cpuOnly", cpuOnly)
	return m.cfg.FS.Update(n, rc)
}

// enforceAllocatable writes node allocatable onto kubepods, recording the
// outcome on the Node; after a failure it is retried by Housekeeping.
func (m *Manager) enforceAllocatable() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.allocatableDone || m.cfg.Clock.Now().Before(m.nextAllocatable) {
		return
	}
	ref := nodestatus.NodeRef(m.cfg.NodeName)
	if err := m.cfg.FS.Update(m.kubepods, m.KubepodsConfig()); err != nil {
		m.nextAllocatable = m.cfg.Clock.Now().Add(allocatableRetry)
		m.cfg.Recorder.Eventf(ref, v1.EventTypeWarning, ReasonFailedNodeAllocatableEnforcement,
			"Failed to update Node Allocatable Limits %q: %v", m.cfg.FS.Driver.Path(m.kubepods), err)
		return
	}
	m.allocatableDone = true
	m.cfg.Recorder.Eventf(ref, v1.EventTypeNormal, ReasonSuccessfulNodeAllocatableEnforcement, "Updated Node Allocatable limit across pods")
}

// PodCgroup is the pod's cgroup: kubepods/pod<uid> for Guaranteed pods,
// kubepods/burstable/pod<uid> and kubepods/besteffort/pod<uid> otherwise.
func (m *Manager) PodCgroup(pod *v1.Pod) Name {
	return podCgroup(m.kubepods, qos.PodQOSClass(pod), pod.UID)
}

func podCgroup(kubepods Name, class v1.PodQOSClass, uid types.UID) Name {
	leaf := podCgroupPrefix + string(uid)
	switch class {
	case v1.PodQOSBurstable:
		return kubepods.Child(BurstableCgroup, leaf)
	case v1.PodQOSBestEffort:
		return kubepods.Child(BestEffortCgroup, leaf)
	}
	return kubepods.Child(leaf)
}

// EnsurePod creates the pod's cgroup (with its limits) when missing and
// returns the sandbox's cgroup parent. The QoS cgroups already count the
// pod: the sync loop calls UpdateQOS when it admits one. Without
// cgroupsPerQOS it returns cgroupRoot as configured.
func (m *Manager) EnsurePod(pod *v1.Pod) (string, error) {
	if !m.cfg.CgroupsPerQOS {
		return m.cfg.CgroupRoot, nil
	}
	n := m.PodCgroup(pod)
	if !m.cfg.FS.Exists(n) {
		rc := PodResourceConfig(pod, m.cfg.Pod)
		if err := m.cfg.FS.Create(n, rc); err != nil {
			return "", fmt.Errorf("create pod cgroup: %w", err)
		}
		klog.V(3).InfoS("Created pod cgroup", "pod", klog.KObj(pod), "cgroup", m.cfg.FS.Driver.Path(n))
	}
	return m.cfg.FS.Driver.CgroupParent(n), nil
}

// DesiredPod is what the pod's cgroup should hold for pod (with the
// resources allocated to it), as EnsurePod creates it.
func (m *Manager) DesiredPod(pod *v1.Pod) ResourceConfig { return PodResourceConfig(pod, m.cfg.Pod) }

// ReadPod reads what the pod's cgroup holds now; ok is false without
// cgroupsPerQOS (there is no pod cgroup to resize).
func (m *Manager) ReadPod(pod *v1.Pod) (rc ResourceConfig, ok bool, err error) {
	if !m.cfg.CgroupsPerQOS {
		return rc, false, nil
	}
	rc, err = m.cfg.FS.Read(m.PodCgroup(pod))
	return rc, true, err
}

// UpdatePod writes rc into the pod's cgroup (an in-place resize).
func (m *Manager) UpdatePod(pod *v1.Pod, rc ResourceConfig) error {
	if !m.cfg.CgroupsPerQOS {
		return nil
	}
	n := m.PodCgroup(pod)
	klog.V(3).InfoS("Resizing pod cgroup", "pod", klog.KObj(pod), "cgroup", m.cfg.FS.Driver.Path(n))
	return m.cfg.FS.Update(n, rc)
}

// PodMemoryUsage is the memory the pod's processes use now.
func (m *Manager) PodMemoryUsage(pod *v1.Pod) (uint64, error) {
	if !m.cfg.CgroupsPerQOS {
		return 0, errors.New("no pod cgroup without cgroupsPerQOS")
	}
	return m.cfg.FS.MemoryUsage(m.PodCgroup(pod))
}

// UpdateQOS writes the QoS cgroups' shares for the active pods (those that
// hold node resources: admitted and not terminating).
func (m *Manager) UpdateQOS(active []*v1.Pod) {
	if !m.cfg.CgroupsPerQOS {
		return
	}
	burstable, bestEffort := QOSConfigs(active)
	if err := m.cfg.FS.Update(m.kubepods.Child(BurstableCgroup), burstable); err != nil {
		klog.ErrorS(err, "Cannot update the burstable QoS cgroup")
	}
	if err := m.cfg.FS.Update(m.kubepods.Child(BestEffortCgroup), bestEffort); err != nil {
		klog.ErrorS(err, "Cannot update the besteffort QoS cgroup")
	}
}

// RemovePod removes the pod's cgroup, whatever its QoS class was. Processes
// still inside are killed; an error means it should be tried again.
func (m *Manager) RemovePod(uid types.UID) error {
	if !m.cfg.CgroupsPerQOS || uid == "" {
		return nil
	}
	var errs []error
	for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.cfg.FS.Destroy(podCgroup(m.kubepods, class, uid)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PodCgroups lists the pod cgroups that exist, by UID.
func (m *Manager) PodCgroups() (map[types.UID]Name, error) {
	out := map[types.UID]Name{}
	for _, parent := range []Name{m.kubepods, m.kubepods.Child(BurstableCgroup), m.kubepods.Child(BestEffortCgroup)} {
		children, err := m.cfg.FS.Children(parent)
		if err != nil {
			return nil, err
		}
		for _, base := range children {
			n, err := m.cfg.FS.Driver.Parse(base)
			if err != nil || len(n) == 0 {
				continue
			}
			uid, ok := strings.CutPrefix(n[len(n)-1], podCgroupPrefix)
			if !ok || uid == "" {
				continue
			}
			out[types.UID(uid)] = parent.Child(podCgroupPrefix + uid)
		}
	}
	return out, nil
}

// OrphanedPodCgroups is the pure part of orphan cleanup: the pod cgroups
// whose UID is not in keep (pods the kubelet knows or the runtime runs).
func OrphanedPodCgroups(existing map[types.UID]Name, keep map[types.UID]bool) []types.UID {
	var out []types.UID
	for uid := range existing {
		if !keep[uid] {
			out = append(out, uid)
		}
	}
	return out
}

// Housekeeping retries node allocatable enforcement and removes pod
// cgroups whose UID is not in keep (the pods the kubelet knows and those
// the runtime still has).
func (m *Manager) Housekeeping(keep map[types.UID]bool) {
	if !m.cfg.CgroupsPerQOS {
		return
	}
	m.enforceAllocatable()
	existing, err := m.PodCgroups()
	if err != nil {
		klog.ErrorS(err, "Housekeeping: cannot list pod cgroups")
		return
	}
	for _, uid := range OrphanedPodCgroups(existing, keep) {
		klog.V(2).InfoS("Removing orphaned pod cgroup", "podUID", uid, "cgroup", m.cfg.FS.Driver.Path(existing[uid]))
		if err := m.cfg.FS.Destroy(existing[uid]); err != nil {
			klog.V(2).InfoS("Orphaned pod cgroup not removed yet", "podUID", uid, "err", err)
		}
	}
}

// SystemdRunning reports whether systemd is the init system, as libcontainer
// checks it: /run/systemd/system exists.
func SystemdRunning() bool {
	st, err := os.Stat("/run/systemd/system")
	return err == nil && st.IsDir()
}
