package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// ContainerToKill names a running container to stop and why.
type ContainerToKill struct {
	ID        string
	Name      string
	Container *v1.Container
	// Message is recorded in the Killing event.
	Message string
	// GracePeriod overrides the pod's (a probe's terminationGracePeriodSeconds).
	GracePeriod *int64
}

// Unhealthy is a running container whose liveness or startup probe failed.
type Unhealthy struct {
	// ContainerID is the instance the probe failed for.
	ContainerID string
	Message     string
	GracePeriod *int64
}

// Inputs is everything ComputePodActions decides on; all of it values, so
// the decision is a pure function a table test can drive.
type Inputs struct {
	// Pod is the desired pod, with the resources the kubelet allocated to
	// its containers (which may lag the spec while a resize is pending).
	Pod *v1.Pod
	// Status is the runtime's view of the pod (GetPodStatus).
	Status *PodStatus
	// Unhealthy are the running containers, by name, whose liveness or
	// startup probe failed.
	Unhealthy map[string]Unhealthy
	// StartupPending names the running containers whose startup probe has
	// not succeeded yet. A restartable init container (sidecar) in it holds
	// back the init and app containers after it, as upstream's
	// computeInitContainerActions does.
	StartupPending map[string]bool
	// Actuated are the resources last applied to the pod's containers (by
	// name) and its cgroup (pod level), from the kubelet's
	// actuated-resources checkpoint; Pod carries the allocated ones. Nil
	// turns in-place resize off; a container missing from it counts as
	// having no resources applied, as upstream's missing record does.
	Actuated *allocation.PodResources
}

// PodActions is what must happen to a pod to bring the runtime in line
// with its spec. The zero value means "nothing to do".
type PodActions struct {
	// KillPod stops every container and the sandbox before anything else.
	KillPod bool
	// CreateSandbox asks for a new sandbox with Attempt.
	CreateSandbox bool
	// SandboxID is the sandbox the containers run in (when not creating).
	SandboxID string
	Attempt   uint32
	// InitContainersToStart are indexes into spec.initContainers, in order.
	InitContainersToStart []int
	// ContainersToStart are indexes into spec.containers.
	ContainersToStart []int
	ContainersToKill  []ContainerToKill
	// EphemeralContainersToStart are indexes into spec.ephemeralContainers:
	// the debug containers that never ran (they are never restarted).
	EphemeralContainersToStart []int
	// Resize is the in-place resize of running containers and of the pod
	// cgroup (pods/resize).
	Resize Resize
}

// Empty reports whether there is nothing to do.
func (a PodActions) Empty() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.InitContainersToStart) == 0 &&
		len(a.ContainersToStart) == 0 && len(a.ContainersToKill) == 0 && len(a.EphemeralContainersToStart) == 0 &&
		a.Resize.Empty()
}

// ShouldRestart reports whether a container that is not running must be
// (re)started, by the pod's restart policy.
func ShouldRestart(pod *v1.Pod, c *v1.Container, s *ContainerStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if s == nil || s.State == StateCreated || s.State == StateUnknown {
		return true
	}
	if s.State == StateRunning {
		return false
	}
	if podutil.IsRestartableInitContainer(c) {
		return true
	}
	if isInit(pod, c) && s.ExitCode == 0 {
		return false // a regular init container runs to success once
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return s.ExitCode != 0
	}
	return true
}

func isInit(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

func succeeded(s *ContainerStatus) bool {
	return s != nil && s.State == StateExited && s.ExitCode == 0
}

// sandboxChange decides whether the pod needs a new sandbox.
func sandboxChange(pod *v1.Pod, st *PodStatus) (create bool, attempt uint32, id string) {
	if st == nil || len(st.Sandboxes) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, sb := range st.Sandboxes {
		if sb.Ready {
			ready++
		}
	}
	latest := st.Sandboxes[0]
	switch {
	case ready > 1, !latest.Ready,
		latest.HostNetwork != pod.Spec.HostNetwork,
		!pod.Spec.HostNetwork && len(latest.IPs) == 0:
		return true, latest.Attempt + 1, latest.ID
	}
	return false, latest.Attempt, latest.ID
}

// initProgress walks the init containers in order. It returns the indexes
// to start now, whether the pod failed initialisation for good, and whether
// every init container has done its part (succeeded, or is a running
// sidecar whose startup probe, if any, succeeded: startupPending names
// those that have not).
func initProgress(pod *v1.Pod, st *PodStatus, startupPending map[string]bool) (start []int, failed, done bool) {
	// Once any app container exists the pod was initialised before.
	for i := range pod.Spec.Containers {
		if st.FindContainer(pod.Spec.Containers[i].Name) != nil {
			for j := range pod.Spec.InitContainers {
				c := &pod.Spec.InitContainers[j]
				if podutil.IsRestartableInitContainer(c) {
					if s := st.FindContainer(c.Name); s == nil || s.State != StateRunning {
						start = append(start, j)
					}
				}
			}
			return start, false, true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s := st.FindContainer(c.Name)
		if podutil.IsRestartableInitContainer(c) {
			if s == nil || s.State != StateRunning {
				return append(start, i), false, false
			}
			if startupPending[c.Name] {
				return start, false, false // wait until it has started
			}
			continue // started sidecar: go on to the next
		}
		switch {
		case s == nil:
			return append(start, i), false, false
		case s.State == StateRunning:
			return start, false, false // wait for it
		case succeeded(s):
			continue
		case s.State == StateExited && pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return start, true, false
		default: // failed (will retry), created or unknown
			return append(start, i), false, false
		}
	}
	return start, false, true
}

// ComputePodActions decides what to do for a pod given what runs, which
// running containers failed their liveness or startup probe, which have
// not passed their startup probe yet, and what resources were applied. It
// is pure.
func ComputePodActions(in Inputs) PodActions {
	pod, st, unhealthy := in.Pod, in.Status, in.Unhealthy
	if st == nil {
		st = &PodStatus{}
	}
	create, attempt, sandboxID := sandboxChange(pod, st)
	a := PodActions{KillPod: create, CreateSandbox: create, Attempt: attempt, SandboxID: sandboxID}

	if create {
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever && attempt != 0 && len(st.Containers) != 0 {
			// The pod ran to its end once; never start it again.
			a.CreateSandbox = false
			return a
		}
		var toStart []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && succeeded(st.FindContainer(c.Name)) {
				continue
			}
			toStart = append(toStart, i)
		}
		if len(toStart) == 0 {
			if _, _, done := initProgress(pod, st, nil); done {
				a.CreateSandbox = false
				return a
			}
		}
		if len(pod.Spec.InitContainers) > 0 {
			a.InitContainersToStart = []int{0}
			return a
		}
		a.ContainersToStart = toStart
		return a
	}

	// Kill containers in an unknown state before anything restarts them.
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if s := st.FindContainer(c.Name); s != nil && s.State == StateUnknown {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
				Message: fmt.Sprintf("Init container %s is in an unknown state, it will be killed and re-created.", c.Name)})
		}
	}

	// Ephemeral containers start whatever the initialisation's progress,
	// once: one that ran (whatever its state) is never started again.
	for i := range pod.Spec.EphemeralContainers {
		if st.FindContainer(pod.Spec.EphemeralContainers[i].Name) == nil {
			a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, i)
		}
	}

	start, failed, done := initProgress(pod, st, in.StartupPending)
	if failed {
		a.KillPod = true
		return a
	}
	a.InitContainersToStart = start
	// A running sidecar whose liveness or startup probe failed is killed and
	// started again, as upstream does (its restartPolicy is Always).
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !podutil.IsRestartableInitContainer(c) {
			continue
		}
		s := st.FindContainer(c.Name)
		if s == nil || s.State != StateRunning {
			continue
		}
		if u, ok := unhealthy[c.Name]; ok && u.ContainerID == s.ID {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
				Message: u.Message, GracePeriod: u.GracePeriod})
			a.InitContainersToStart = append(a.InitContainersToStart, i)
			continue
		}
		if resizeContainer(pod, c, s, in.Actuated, &a) {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
				Message: fmt.Sprintf("Container %s resize requires restart", c.Name)})
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		}
	}
	if !done {
		// A regular init container that runs is resized in place (its
		// resize policy cannot ask for a restart).
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			if !podutil.IsRestartableInitContainer(c) {
				resizeContainer(pod, c, st.FindContainer(c.Name), in.Actuated, &a)
			}
		}
		orderUpdates(&a.Resize)
		return a
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s := st.FindContainer(c.Name)
		if s == nil || s.State != StateRunning {
			if s != nil && s.State == StateUnknown {
				a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
					Message: fmt.Sprintf("Container %s is in an unknown state, it will be killed and re-created.", c.Name)})
			}
			if ShouldRestart(pod, c, s) {
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
			continue
		}
		if u, ok := unhealthy[c.Name]; ok && u.ContainerID == s.ID {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
				Message: u.Message, GracePeriod: u.GracePeriod})
			if ShouldRestart(pod, c, &ContainerStatus{State: StateExited, ExitCode: 1}) {
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
			continue
		}
		if s.Hash != criconfig.ContainerHash(c) {
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
				Message: fmt.Sprintf("Container %s definition changed", c.Name)})
			if ShouldRestart(pod, c, nil) {
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
			continue
		}
		if resizeContainer(pod, c, s, in.Actuated, &a) {
			// As upstream: restarted whatever the restart policy.
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: s.ID, Name: c.Name, Container: c,
				Message: fmt.Sprintf("Container %s resize requires restart", c.Name)})
			a.ContainersToStart = append(a.ContainersToStart, i)
			continue
		}
		keep++
	}
	if keep == 0 && len(a.ContainersToStart) == 0 {
		// Nothing runs and nothing will: the pod is done; stop its sandbox.
		a.KillPod = true
		a.ContainersToKill = nil
		a.InitContainersToStart = nil
		a.Resize = Resize{}
		return a
	}
	if podLevelChanged(pod, in.Actuated) {
		a.Resize.Pod = true
	}
	orderUpdates(&a.Resize)
	return a
}
