package logs

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// Waiting reasons a container that never ran reports, as upstream.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
)

// runtimeName prefixes container IDs the handler builds from CRI listings.
const runtimeName = "containerd"

// containerKind is where in the pod spec a container is declared.
type containerKind int

const (
	kindRegular containerKind = iota
	kindInit
	kindEphemeral
)

// specContainer finds the container named name among the pod's regular,
// init and ephemeral containers.
func specContainer(pod *v1.Pod, name string) (*v1.Container, containerKind, bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], kindRegular, true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], kindInit, true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c, kindEphemeral, true
		}
	}
	return nil, 0, false
}

// chooseContainer picks the container instance whose log is wanted, from
// the container's API status, with upstream's rules and messages: previous
// wants the last terminated instance; otherwise a running instance, then
// the current terminated one, then the last terminated one.
func chooseContainer(podName string, cs *v1.ContainerStatus, name string, previous bool) (string, error) {
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", name, podName)
	}
	last := cs.LastTerminationState.Terminated
	waiting, running, terminated := cs.State.Waiting, cs.State.Running, cs.State.Terminated
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", name, podName)
		}
		return last.ContainerID, nil
	case running != nil:
		return cs.ContainerID, nil
	case terminated != nil:
		if terminated.ContainerID != "" {
			return terminated.ContainerID, nil
		}
		if last != nil && last.ContainerID != "" {
			return last.ContainerID, nil
		}
		return "", fmt.Errorf("container %q in pod %q is terminated", name, podName)
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", name, podName)
		}
		return last.ContainerID, nil
	case waiting != nil:
		switch waiting.Reason {
		case reasonErrImagePull:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", name, podName)
		case reasonImagePullBackOff:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", name, podName)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %v", name, podName, waiting.Reason)
		}
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, podName)
}

// apiStatus is the container's status: the kubelet's own when it has one
// for the container, else one built from the runtime's instances of it.
func (h *containerLogs) apiStatus(ctx context.Context, pod *v1.Pod, spec *v1.Container, kind containerKind) (*v1.ContainerStatus, error) {
	if h.cfg.Statuses != nil {
		if st, ok := h.cfg.Statuses.Get(pod.UID); ok {
			for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
				for i := range list {
					if list[i].Name == spec.Name {
						return &list[i], nil
					}
				}
			}
		}
	}
	return h.runtimeStatus(ctx, pod, spec, kind)
}

// runtimeStatus builds the container's status from the runtime as the
// kubelet's status generation would: the newest instance is the current
// one, unless it exited and is due a restart, in which case it is the last
// termination and the container waits; otherwise the instance before the
// newest is the last termination.
func (h *containerLogs) runtimeStatus(ctx context.Context, pod *v1.Pod, spec *v1.Container, kind containerKind) (*v1.ContainerStatus, error) {
	resp, err := h.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{criconfig.LabelPodUID: string(pod.UID)}},
	})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %q: %w", pod.Name, err)
	}
	byName := map[string][]*runtimeapi.Container{}
	for _, c := range resp.GetContainers() {
		n := c.GetLabels()[criconfig.LabelContainerName]
		byName[n] = append(byName[n], c)
	}
	for _, list := range byName {
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].GetCreatedAt() != list[j].GetCreatedAt() {
				return list[i].GetCreatedAt() > list[j].GetCreatedAt()
			}
			return list[i].GetMetadata().GetAttempt() > list[j].GetMetadata().GetAttempt()
		})
	}
	cs := &v1.ContainerStatus{Name: spec.Name}
	instances := byName[spec.Name]
	if len(instances) == 0 {
		reason := reasonContainerCreating
		if kind == kindRegular && !h.initialized(ctx, pod, byName) {
			reason = reasonPodInitializing
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
		return cs, nil
	}
	latest := instances[0]
	id := runtimeName + "://" + latest.GetId()
	cs.ContainerID = id
	if len(instances) > 1 && instances[1].GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
		cs.LastTerminationState.Terminated = h.terminated(ctx, instances[1])
	}
	switch latest.GetState() {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.State.Running = &v1.ContainerStateRunning{}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		term := h.terminated(ctx, latest)
		restart := kind != kindEphemeral && kuberuntime.ShouldRestart(pod, spec,
			&kuberuntime.ContainerStatus{State: kuberuntime.StateExited, ExitCode: term.ExitCode})
		if restart {
			cs.LastTerminationState.Terminated = term
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}
		} else {
			cs.State.Terminated = term
		}
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonContainerCreating}
	default:
		cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown", ContainerID: id}
	}
	return cs, nil
}

// terminated describes an exited instance; its exit code comes from the
// runtime's status of it (0 when that is unavailable).
func (h *containerLogs) terminated(ctx context.Context, c *runtimeapi.Container) *v1.ContainerStateTerminated {
	t := &v1.ContainerStateTerminated{ContainerID: runtimeName + "://" + c.GetId()}
	if resp, err := h.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()}); err == nil {
		t.ExitCode = resp.GetStatus().GetExitCode()
		t.Reason = resp.GetStatus().GetReason()
		if fin := resp.GetStatus().GetFinishedAt(); fin > 0 {
			t.FinishedAt = metav1.Unix(0, fin)
		}
	}
	return t
}

// initialized reports whether every init container is done: a regular one
// exited successfully, a sidecar is running.
func (h *containerLogs) initialized(ctx context.Context, pod *v1.Pod, byName map[string][]*runtimeapi.Container) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		instances := byName[c.Name]
		if len(instances) == 0 {
			return false
		}
		latest := instances[0]
		sidecar := podutil.IsRestartableInitContainer(c)
		switch {
		case sidecar:
			if latest.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false
			}
		case latest.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED:
			return false
		case h.terminated(ctx, latest).ExitCode != 0:
			return false
		}
	}
	return true
}
