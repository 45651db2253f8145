package kuberuntime

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// PodResizer is what an in-place resize needs of the pod's cgroup (the
// container manager has it).
type PodResizer interface {
	// DesiredPod is what the pod's cgroup should hold for pod.
	DesiredPod(pod *v1.Pod) cgroups.ResourceConfig
	// ReadPod reads what it holds now; ok is false when there is no pod
	// cgroup (cgroupsPerQOS off).
	ReadPod(pod *v1.Pod) (rc cgroups.ResourceConfig, ok bool, err error)
	// UpdatePod writes rc into it.
	UpdatePod(pod *v1.Pod, rc cgroups.ResourceConfig) error
	// PodMemoryUsage is the memory the pod uses now, in bytes.
	PodMemoryUsage(pod *v1.Pod) (uint64, error)
}

var _ PodResizer = (*cgroups.Manager)(nil)

// Actuated returns the pod's actuated-resources record (what the kubelet
// applied to its containers and cgroup); nil (resize off) without a store.
func (m *Manager) Actuated(pod *v1.Pod) *allocation.PodResources {
	if m.cfg.Actuated == nil {
		return nil
	}
	pr, _ := m.cfg.Actuated.Pod(pod.UID)
	return &pr
}

// adoptRunning records, for each running container of pod that has no
// actuated record (started by a kubelet before in-place resize, or a lost
// checkpoint), the resources it was allocated: what it was created with.
// Upstream counts such a container as having nothing applied, which makes
// it resize (or, with a RestartContainer policy, restart) a container that
// already runs as it should.
func (m *Manager) adoptRunning(pod *v1.Pod, st *PodStatus) {
	if m.cfg.Actuated == nil {
		return
	}
	recorded := m.cfg.Actuated.Containers(pod.UID)
	adopt := func(c *v1.Container) {
		if s := st.FindContainer(c.Name); s == nil || s.State != StateRunning {
			return
		}
		if _, ok := recorded[c.Name]; ok {
			return
		}
		klog.V(2).InfoS("Adopting a running container's resources as applied", "pod", klog.KObj(pod), "container", c.Name)
		m.recordStarted(pod, c, false)
	}
	for i := range pod.Spec.InitContainers {
		adopt(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		adopt(&pod.Spec.Containers[i])
	}
}

// recordStarted records the resources a started container was given.
func (m *Manager) recordStarted(pod *v1.Pod, c *v1.Container, ephemeral bool) {
	if m.cfg.Actuated == nil || ephemeral {
		return
	}
	if err := m.cfg.Actuated.SetContainer(pod.UID, c.Name, ValuesOf(pod.Spec.Resources, c.Resources).Requirements()); err != nil {
		klog.ErrorS(err, "Cannot record the container's actuated resources", "pod", klog.KObj(pod), "container", c.Name)
	}
}

// ResizeInProgress reports whether what runs differs from what the pod
// was allocated (see the package function).
func (m *Manager) ResizeInProgress(pod *v1.Pod, st *PodStatus) bool {
	m.adoptRunning(pod, st)
	return ResizeInProgress(pod, st, m.Actuated(pod))
}

// resize carries out an in-place resize (upstream's doPodResizeAction):
// memory first, then CPU; for each, the pod cgroup grows before the
// containers and shrinks after them, a limit grows before its request and
// shrinks after it. A memory limit below what the pod or a container uses
// now is refused (the kernel would OOM-kill it) with upstream's message.
// It stops at the first error; the next sync tries again.
func (m *Manager) resize(ctx context.Context, pod *v1.Pod, r Resize, sandboxID string, sandbox *runtimeapi.PodSandboxConfig) (err error) {
	start := m.cfg.Clock.Now()
	defer func() {
		if m.cfg.Metrics != nil {
			m.cfg.Metrics.PodResizeDurationMilliseconds.WithLabelValues(strconv.FormatBool(err == nil)).
				Observe(float64(m.cfg.Clock.Since(start).Milliseconds()))
		}
	}()
	var desired, current cgroups.ResourceConfig
	hasPodCgroup := false
	if m.cfg.PodResizer != nil {
		desired = m.cfg.PodResizer.DesiredPod(pod)
		var rerr error
		current, hasPodCgroup, rerr = m.cfg.PodResizer.ReadPod(pod)
		if rerr != nil {
			return fmt.Errorf("unable to get pod cgroup config for pod %q: %w", criconfig.PodDesc(pod), rerr)
		}
	}
	if len(r.Memory) > 0 || r.Pod {
		if err := m.validateMemory(ctx, pod, r, desired, current, hasPodCgroup); err != nil {
			return err
		}
	}
	notified := false
	setPod := func(rc cgroups.ResourceConfig) error {
		if !hasPodCgroup {
			return nil
		}
		if !notified {
			// As upstream: the runtime hears of it first, and may refuse.
			if err := m.notifySandbox(ctx, sandboxID, pod, sandbox); err != nil {
				return fmt.Errorf("failed to notify runtime for UpdatePodSandboxResources; resize rejected: %w", err)
			}
			notified = true
		}
		if err := m.cfg.PodResizer.UpdatePod(pod, rc); err != nil {
			return fmt.Errorf("failed to set pod cgroup config: %w", err)
		}
		return nil
	}
	if len(r.Memory) > 0 || r.Pod {
		// A pod without a memory limit keeps its cgroup's (removing a
		// limit in place is not supported, as upstream).
		curLim, newLim := derefInt64(current.Memory), derefInt64(current.Memory)
		if desired.Memory != nil {
			newLim = *desired.Memory
		}
		if curLim < 0 { // unlimited
			curLim = 1<<63 - 1
		}
		grow := newLim > curLim
		if grow {
			if err := setPod(cgroups.ResourceConfig{Memory: &newLim}); err != nil {
				return err
			}
		}
		if err := m.updateContainers(ctx, pod, r.Memory, true); err != nil {
			return err
		}
		// The CPU step sends the memory values just applied.
		for i := range r.CPU {
			for _, u := range r.Memory {
				if u.Name == r.CPU[i].Name {
					r.CPU[i].Current.MemoryLimit, r.CPU[i].Current.MemoryRequest = u.Desired.MemoryLimit, u.Desired.MemoryRequest
				}
			}
		}
		if !grow && newLim != curLim && desired.Memory != nil {
			if err := setPod(cgroups.ResourceConfig{Memory: &newLim}); err != nil {
				return err
			}
		}
	}
	if len(r.CPU) > 0 || r.Pod {
		curQuota, newQuota := derefInt64(current.CPUQuota), derefInt64(current.CPUQuota)
		if desired.CPUQuota != nil {
			newQuota = *desired.CPUQuota
		}
		if curQuota < 0 {
			curQuota = 1<<63 - 1
		}
		if newQuota < 0 {
			newQuota = 1<<63 - 1
		}
		curShares, newShares := derefUint64(current.CPUShares), derefUint64(current.CPUShares)
		if desired.CPUShares != nil {
			newShares = *desired.CPUShares
		}
		limits := cgroups.ResourceConfig{CPUQuota: desired.CPUQuota, CPUPeriod: desired.CPUPeriod}
		if desired.CPUQuota == nil {
			limits = cgroups.ResourceConfig{}
		}
		shares := cgroups.ResourceConfig{CPUShares: &newShares}
		if newQuota > curQuota {
			if err := setPod(limits); err != nil {
				return err
			}
		}
		if newShares > curShares {
			if err := setPod(shares); err != nil {
				return err
			}
		}
		if err := m.updateContainers(ctx, pod, r.CPU, false); err != nil {
			return err
		}
		if newShares < curShares {
			if err := setPod(shares); err != nil {
				return err
			}
		}
		if newQuota < curQuota {
			if err := setPod(limits); err != nil {
				return err
			}
		}
	}
	if r.Pod && m.cfg.Actuated != nil && pod.Spec.Resources != nil {
		if err := m.cfg.Actuated.SetPodLevel(pod.UID, pod.Spec.Resources); err != nil {
			return err
		}
	}
	klog.V(2).InfoS("Resized pod in place", "pod", klog.KObj(pod), "memoryUpdates", len(r.Memory), "cpuUpdates", len(r.CPU), "podCgroup", r.Pod)
	return nil
}

// updateContainers sends each container its new memory (or CPU) values
// with its current CPU (or memory) ones, and records what was applied.
func (m *Manager) updateContainers(ctx context.Context, pod *v1.Pod, us []ContainerUpdate, memory bool) error {
	for _, u := range us {
		v := u.Current
		if memory {
			v.MemoryLimit, v.MemoryRequest = u.Desired.MemoryLimit, u.Desired.MemoryRequest
		} else {
			v.CPULimit, v.CPURequest = u.Desired.CPULimit, u.Desired.CPURequest
		}
		c := u.Container.DeepCopy()
		c.Resources = v.Requirements()
		// The pod-level limits are already in v.
		flat := pod.DeepCopy()
		flat.Spec.Resources = nil
		lr, err := m.cfg.Spec.ContainerResources(flat, c)
		if err != nil {
			return fmt.Errorf("container %q: cannot generate resources config: %w", u.Name, err)
		}
		if _, err := m.runtime.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: u.ID, Linux: lr}); err != nil {
			return fmt.Errorf("container %q: UpdateContainerResources failed: %w", u.Name, err)
		}
		if m.cfg.Actuated != nil {
			if err := m.cfg.Actuated.SetContainer(pod.UID, u.Name, c.Resources); err != nil {
				return err
			}
		}
		klog.V(3).InfoS("Updated container resources", "pod", klog.KObj(pod), "container", u.Name, "containerID", u.ID, "values", v)
	}
	return nil
}

// validateMemory refuses memory limits below current usage, as upstream's
// validateMemoryResizeAction (best effort: usage may change right after).
func (m *Manager) validateMemory(ctx context.Context, pod *v1.Pod, r Resize, desired, current cgroups.ResourceConfig, hasPodCgroup bool) error {
	podDecreasing := hasPodCgroup && desired.Memory != nil && (current.Memory == nil || *current.Memory < 0 || *desired.Memory < *current.Memory)
	decreasing := map[string]ContainerUpdate{}
	for _, u := range r.Memory {
		if u.Desired.MemoryLimit != 0 && (u.Current.MemoryLimit == 0 || u.Desired.MemoryLimit < u.Current.MemoryLimit) {
			decreasing[u.Name] = u
		}
	}
	if !podDecreasing && len(decreasing) == 0 {
		return nil
	}
	var errs []string
	if podDecreasing {
		usage, err := m.cfg.PodResizer.PodMemoryUsage(pod)
		switch {
		case err != nil:
			errs = append(errs, "missing pod memory usage")
		case usage >= uint64(*desired.Memory):
			errs = append(errs, fmt.Sprintf("attempting to set pod memory limit (%d) below current usage (%d)", *desired.Memory, usage))
		}
	}
	for _, c := range pod.Spec.Containers {
		u, ok := decreasing[c.Name]
		if !ok {
			continue
		}
		errs = append(errs, m.containerUsageError(ctx, u)...)
		delete(decreasing, c.Name)
	}
	for _, u := range decreasing { // init containers
		errs = append(errs, m.containerUsageError(ctx, u)...)
	}
	if len(errs) == 0 {
		return nil
	}
	msg := errs[0]
	if len(errs) > 1 {
		msg = "[" + strings.Join(errs, ", ") + "]"
	}
	return fmt.Errorf("cannot decrease memory limits: %s", msg)
}

func (m *Manager) containerUsageError(ctx context.Context, u ContainerUpdate) []string {
	resp, err := m.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: u.ID})
	usage := resp.GetStats().GetMemory().GetUsageBytes()
	if err != nil || usage == nil {
		return []string{fmt.Sprintf("missing container %q memory usage", u.Name)}
	}
	if usage.GetValue() >= uint64(u.Desired.MemoryLimit) {
		return []string{fmt.Sprintf("attempting to set container %q memory limit (%d) below current usage (%d)", u.Name, u.Desired.MemoryLimit, usage.GetValue())}
	}
	return nil
}

// notifySandbox tells the runtime the pod's new resources
// (UpdatePodSandboxResources); best effort as upstream: a runtime that
// does not implement it (containerd 1.6 and 2.x) is not an error.
func (m *Manager) notifySandbox(ctx context.Context, sandboxID string, pod *v1.Pod, sandbox *runtimeapi.PodSandboxConfig) error {
	if sandboxID == "" || sandbox == nil {
		return nil
	}
	_, err := m.runtime.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: sandboxID, Overhead: sandbox.GetLinux().GetOverhead(), Resources: sandbox.GetLinux().GetResources(),
	})
	if err == nil {
		return nil
	}
	st, _ := grpcstatus.FromError(err)
	if st.Code() == codes.Unimplemented || (st.Code() == codes.Unknown && strings.Contains(st.Message(), "not implemented")) {
		klog.V(3).InfoS("UpdatePodSandboxResources is not implemented by the runtime; going on with the resize", "pod", klog.KObj(pod))
		return nil
	}
	return fmt.Errorf("updatePodSandboxResources failed for sandbox %q: %w", sandboxID, err)
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func derefUint64(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
