package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/containergc"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// GracePeriod is how long a container of pod gets to stop: the override
// when given, else the pod's deletion grace period, else its spec's; never
// below MinGracePeriod.
func GracePeriod(pod *v1.Pod, override *int64) int64 {
	g := int64(30)
	switch {
	case override != nil:
		g = *override
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		g = *pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if g < MinGracePeriod {
		g = MinGracePeriod
	}
	return g
}

// KillPod stops every running container of the pod in parallel, then its
// sandboxes. pod may be nil for pods found on the runtime without a spec.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, st *PodStatus, gracePeriod *int64) error {
	start := m.cfg.Clock.Now()
	apps, sidecars := splitForKill(pod, st)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, c := range apps {
		wg.Add(1)
		go func(c *ContainerStatus) {
			defer wg.Done()
			grace, owner := gracePeriod, pod
			if pod == nil {
				if grace == nil {
					grace = c.GracePeriod
				}
				// As upstream, the container's labels and annotations
				// stand in for the spec the kubelet no longer has, so
				// its preStop hook still runs.
				owner = RestoredPod(st, c)
			}
			if err := m.killContainer(ctx, owner, c.ID, c.Name, "", firstIP(st), grace); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	// Sidecars outlive the app containers, as upstream: they stop after
	// them, the last declared first, each within what is left of the pod's
	// grace period, so a preStop hook can still reach an earlier sidecar.
	total := GracePeriod(pod, gracePeriod)
	for _, c := range sidecars {
		left := total - int64(m.cfg.Clock.Since(start)/time.Second)
		if left < MinGracePeriod {
			left = MinGracePeriod
		}
		if err := m.killContainer(ctx, pod, c.ID, c.Name, "", firstIP(st), &left); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, sb := range st.Sandboxes {
		if !sb.Ready {
			continue
		}
		if _, err := m.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.ID}); err != nil {
			return fmt.Errorf("stop sandbox %s of pod %s/%s: %w", sb.ID, st.Namespace, st.Name, err)
		}
		klog.V(2).InfoS("Stopped pod sandbox", "pod", klog.KRef(st.Namespace, st.Name), "sandboxID", sb.ID)
	}
	return nil
}

// splitForKill picks the containers KillPod stops: those running (or
// created, or unknown), split into the ones stopped first, all at once, and
// the pod's restartable init containers (sidecars), in reverse spec order,
// stopped one by one after them. Without a spec (pod nil) there are no
// sidecars to tell apart. It is pure.
func splitForKill(pod *v1.Pod, st *PodStatus) (first, sidecars []*ContainerStatus) {
	order := map[string]int{}
	if pod != nil {
		for i := range pod.Spec.InitContainers {
			if c := &pod.Spec.InitContainers[i]; podutil.IsRestartableInitContainer(c) {
				order[c.Name] = i
			}
		}
	}
	for _, c := range st.Containers {
		if c.State != StateRunning && c.State != StateCreated && c.State != StateUnknown {
			continue
		}
		if _, ok := order[c.Name]; ok {
			sidecars = append(sidecars, c)
		} else {
			first = append(first, c)
		}
	}
	sort.SliceStable(sidecars, func(i, j int) bool { return order[sidecars[i].Name] > order[sidecars[j].Name] })
	return first, sidecars
}

// firstIP is the pod's primary IP on the runtime ("" when none): where an
// httpGet or tcpSocket preStop hook without a host goes.
func firstIP(st *PodStatus) string {
	if st == nil || len(st.IPs) == 0 {
		return ""
	}
	return st.IPs[0]
}

func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id, name, message, podIP string, gracePeriod *int64) error {
	grace := GracePeriod(pod, gracePeriod)
	if pod != nil {
		if message == "" {
			message = fmt.Sprintf("Stopping container %s", name)
		}
		m.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.Killing, "%s", message)
	}
	if pod != nil && m.cfg.RunHook != nil {
		if c := criconfig.FindContainer(pod, name); c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			// The preStop hook runs inside the grace period; what is left of
			// it (at least the minimum) is the runtime's stop timeout.
			start := m.cfg.Clock.Now()
			hctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
			if err := m.cfg.RunHook(hctx, c.Lifecycle.PreStop, c, id, podIP, time.Duration(grace)*time.Second); err != nil {
				m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedPreStopHook, "PreStopHook failed: %v", err)
			}
			cancel()
			grace -= int64(m.cfg.Clock.Since(start) / time.Second)
			if grace < MinGracePeriod {
				grace = MinGracePeriod
			}
		}
	}
	klog.V(2).InfoS("Killing container with a grace period", "pod", klog.KObj(pod), "container", name, "containerID", id, "gracePeriod", grace)
	// The stop call itself may take the whole grace period.
	cctx, cancel := context.WithTimeout(ctx, timeoutFor(grace))
	defer cancel()
	if _, err := m.runtime.StopContainer(cctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: grace}); err != nil {
		return fmt.Errorf("stop container %q (%s): %w", name, id, err)
	}
	return nil
}

func timeoutFor(grace int64) time.Duration {
	return time.Duration(grace+30) * time.Second
}

// RemovePod removes every container and sandbox of a pod from the runtime,
// with the pod's files and log directory. Called once the pod is gone.
func (m *Manager) RemovePod(ctx context.Context, st *PodStatus) error {
	for _, c := range st.Containers {
		if _, err := m.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ID}); err != nil {
			return fmt.Errorf("remove container %s of pod %s/%s: %w", c.ID, st.Namespace, st.Name, err)
		}
		m.unlinkContainerLog(st.Name, st.Namespace, c.Name, c.ID)
	}
	for _, sb := range st.Sandboxes {
		if _, err := m.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.ID}); err != nil {
			return fmt.Errorf("remove sandbox %s of pod %s/%s: %w", sb.ID, st.Namespace, st.Name, err)
		}
	}
	if st.UID != "" {
		if m.cfg.UserNamespaces != nil {
			m.cfg.UserNamespaces.Release(st.UID)
		}
		if m.cfg.Actuated != nil {
			if err := m.cfg.Actuated.Remove(st.UID); err != nil {
				klog.V(2).InfoS("Cannot forget the pod's actuated resources; housekeeping retries", "podUID", st.UID, "err", err)
			}
		}
		if m.cfg.TearDownVolumes != nil {
			if err := m.cfg.TearDownVolumes(string(st.UID)); err != nil {
				return fmt.Errorf("tear down volumes of pod %s/%s: %w", st.Namespace, st.Name, err)
			}
		}
		if err := volume.RemovePodDir(m.PodDir(st.UID)); err != nil {
			// Housekeeping tries again (CleanupOrphanedPodDirs).
			klog.InfoS("Pod directory not removed yet", "pod", klog.KRef(st.Namespace, st.Name), "podUID", st.UID, "err", err)
		}
		os.RemoveAll(criconfig.PodLogDir(m.cfg.Spec.PodLogsDir, st.Namespace, st.Name, st.UID))
		if m.cfg.PodCgroups != nil {
			// Housekeeping retries what is left (processes still exiting).
			if err := m.cfg.PodCgroups.RemovePod(st.UID); err != nil {
				klog.V(2).InfoS("Pod cgroup not removed yet", "pod", klog.KRef(st.Namespace, st.Name), "podUID", st.UID, "err", err)
			}
		}
	}
	return nil
}

func (m *Manager) unlinkContainerLog(podName, ns, name, id string) {
	if m.cfg.ContainerLogsDir == "" {
		return
	}
	os.Remove(filepath.Join(m.cfg.ContainerLogsDir, fmt.Sprintf("%s_%s_%s-%s.log", podName, ns, name, id)))
}

// CleanupOrphanedPodDirs removes the pod directories under PodsDir and the
// pod log directories whose UID is not in keep (pods the kubelet knows or
// the runtime still has), as upstream's housekeeping does. A pod directory
// first has its volumes torn down (subPath binds and tmpfs mounts left by
// this or an earlier kubelet process); it is never removed while anything
// else is mounted below it, nor across a filesystem boundary, nor while
// PodHasVolumes says plugin volumes there wait for their teardown, and is
// retried at the next housekeeping.
func (m *Manager) CleanupOrphanedPodDirs(keep map[types.UID]bool) {
	if m.cfg.UserNamespaces != nil {
		m.cfg.UserNamespaces.CleanupOrphans(keep)
	}
	if m.cfg.Actuated != nil {
		if err := m.cfg.Actuated.RemoveOrphans(keep); err != nil {
			klog.V(2).InfoS("Cannot remove orphaned actuated resources", "err", err)
		}
	}
	if entries, err := os.ReadDir(m.cfg.PodsDir); err == nil {
		for _, e := range entries {
			uid := types.UID(e.Name())
			if keep[uid] {
				continue
			}
			if m.cfg.PodHasVolumes != nil && m.cfg.PodHasVolumes(string(uid)) {
				// Their teardown (a CSI driver's unpublish and unstage)
				// needs what the directory records; it runs apart.
				klog.V(4).InfoS("Orphaned pod directory still has volumes, left for their teardown", "podUID", uid)
				continue
			}
			if err := m.removePodDir(uid); err != nil {
				klog.V(3).InfoS("Orphaned pod found, but its directory cannot be removed yet", "podUID", uid, "err", err)
				continue
			}
			klog.V(2).InfoS("Removed orphaned pod directory", "podUID", uid)
		}
	}
	if entries, err := os.ReadDir(m.cfg.Spec.PodLogsDir); err == nil {
		for _, e := range entries {
			parts := strings.Split(e.Name(), "_")
			if len(parts) == 3 && !keep[types.UID(parts[2])] {
				dir := filepath.Join(m.cfg.Spec.PodLogsDir, e.Name())
				klog.V(2).InfoS("Removing orphaned pod log directory", "path", dir)
				if err := os.RemoveAll(dir); err != nil {
					klog.ErrorS(err, "Cannot remove orphaned pod log directory", "path", dir)
				}
			}
		}
	}
}

// removePodDir tears down the pod's volumes and removes its directory.
func (m *Manager) removePodDir(uid types.UID) error {
	if m.cfg.TearDownVolumes != nil {
		if err := m.cfg.TearDownVolumes(string(uid)); err != nil {
			return err
		}
	}
	return volume.RemovePodDir(m.PodDir(uid))
}

// PruneContainers removes the dead instances of each container beyond the
// newest keep that are older than DeadContainerMinAge (with their logs), as
// the container GC's MaxPerPodContainer does, and dead sandboxes other than
// the newest, so a crash-looping pod does not pile up between GC passes. A
// negative keep keeps every dead instance.
func (m *Manager) PruneContainers(ctx context.Context, st *PodStatus, keep int) {
	byName := map[string][]containergc.Container{}
	for _, c := range st.Containers {
		byName[c.Name] = append(byName[c.Name], containergc.Container{
			ID: c.ID, PodUID: st.UID, PodName: st.Name, PodNamespace: st.Namespace, Name: c.Name, SandboxID: c.SandboxID,
			// A created instance is about to be started: never prune it.
			Running: c.State == StateRunning || c.State == StateCreated, CreatedAt: c.CreatedAt,
		})
	}
	removed := map[string]bool{}
	for _, instances := range byName {
		for _, c := range containergc.DeadInstancesToRemove(instances, keep, m.cfg.DeadContainerMinAge, m.cfg.Clock.Now()) {
			if err := containergc.RemoveContainer(ctx, m.runtime, m.cfg.CleanLogs, m.cfg.ContainerLogsDir, c); err != nil {
				klog.V(2).InfoS("Cannot remove dead container", "containerID", c.ID, "err", err)
				continue
			}
			removed[c.ID] = true
		}
	}
	inUse := map[string]bool{}
	for _, c := range st.Containers {
		if !removed[c.ID] {
			inUse[c.SandboxID] = true
		}
	}
	for i, sb := range st.Sandboxes {
		if i == 0 || sb.Ready || inUse[sb.ID] {
			continue
		}
		if _, err := m.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.ID}); err != nil {
			klog.V(2).InfoS("Cannot remove dead sandbox", "sandboxID", sb.ID, "err", err)
		}
	}
}

// RestoredPod rebuilds what the kubelet knows of a pod it has no spec for
// from one of its containers: identity, grace period and that container's
// preStop handler. It is pure.
func RestoredPod(st *PodStatus, c *ContainerStatus) *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = st.Name, st.Namespace, st.UID
	pod.Spec.TerminationGracePeriodSeconds = c.GracePeriod
	spec := v1.Container{Name: c.Name}
	if c.PreStop != nil {
		spec.Lifecycle = &v1.Lifecycle{PreStop: c.PreStop}
	}
	pod.Spec.Containers = []v1.Container{spec}
	return pod
}
