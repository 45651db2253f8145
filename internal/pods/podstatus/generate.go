package podstatus

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/qos"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// Input is everything Generate looks at.
type Input struct {
	Pod     *v1.Pod
	Runtime *kuberuntime.PodStatus
	// Failures are the last start failures by container name.
	Failures map[string]kuberuntime.ContainerFailure
	// Old is the status last reported, for transition times and start time.
	Old     v1.PodStatus
	HostIPs []string
	// RuntimeName prefixes container IDs ("containerd://<id>").
	RuntimeName string
	// Terminal is set once the pod's containers were stopped for good (the
	// pod was deleted or finished): the phase is then Succeeded or Failed.
	Terminal bool
	// Ready reports readiness of a running container (probes); nil means
	// a running container is ready.
	Ready func(name string) bool
	// Started reports whether a running container passed its startup
	// probe; nil means a running container has started.
	Started func(name string) bool
	Now     time.Time
	// Actuated are the resources the kubelet applied to the pod's
	// containers, for status.containerStatuses[].resources where the
	// runtime reports none; may be nil.
	Actuated *allocation.PodResources
	// ResizeConditions are the pod's PodResizePending and
	// PodResizeInProgress conditions (the allocation manager's).
	ResizeConditions []v1.PodCondition
}

// Generate computes the pod's status.
func Generate(in Input) v1.PodStatus {
	pod := in.Pod
	rt := in.Runtime
	if rt == nil {
		rt = &kuberuntime.PodStatus{}
	}
	now := metav1.NewTime(in.Now)
	s := v1.PodStatus{
		ObservedGeneration: pod.Generation,
		QOSClass:           qos.PodQOSClass(pod),
		StartTime:          in.Old.StartTime,
	}
	if s.StartTime == nil {
		s.StartTime = &now
	}
	for _, ip := range in.HostIPs {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
	}
	if len(in.HostIPs) > 0 {
		s.HostIP = in.HostIPs[0]
	}
	ips := rt.IPs
	if pod.Spec.HostNetwork {
		ips = in.HostIPs
	}
	if len(ips) == 0 && len(rt.Sandboxes) > 0 && !rt.Sandboxes[0].Ready {
		// The pod is stopping or stopped: keep the address it had.
		for _, ip := range in.Old.PodIPs {
			ips = append(ips, ip.IP)
		}
	}
	for _, ip := range ips {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		s.PodIP = ips[0]
	}

	// As upstream, a container not created yet waits in PodInitializing
	// when the pod has init containers (init containers included), else in
	// ContainerCreating.
	hasInit := len(pod.Spec.InitContainers) > 0
	for i := range pod.Spec.InitContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, in.containerStatus(&pod.Spec.InitContainers[i], hasInit, true))
	}
	for i := range pod.Spec.Containers {
		cs := in.containerStatus(&pod.Spec.Containers[i], hasInit, false)
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	sort.Slice(s.ContainerStatuses, func(i, j int) bool { return s.ContainerStatuses[i].Name < s.ContainerStatuses[j].Name })
	for i := range pod.Spec.EphemeralContainers {
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, in.ephemeralStatus(&pod.Spec.EphemeralContainers[i], hasInit))
	}
	sort.Slice(s.EphemeralContainerStatuses, func(i, j int) bool {
		return s.EphemeralContainerStatuses[i].Name < s.EphemeralContainerStatuses[j].Name
	})

	s.Resources, s.AllocatedResources = podResources(pod)

	s.Phase = Phase(pod, s.InitContainerStatuses, s.ContainerStatuses)
	if in.Terminal && !isTerminal(s.Phase) {
		s.Phase = terminalPhase(s.ContainerStatuses)
	}
	if isTerminal(in.Old.Phase) {
		s.Phase = in.Old.Phase
		s.Reason, s.Message = in.Old.Reason, in.Old.Message
	}
	s.Conditions = in.conditions(s, rt)
	// DisruptionTarget comes from a one-time event (an eviction, the node
	// shutting down), not from the containers: keep it, as upstream.
	for _, c := range in.Old.Conditions {
		if c.Type == v1.DisruptionTarget {
			s.Conditions = append(s.Conditions, c)
		}
	}
	return s
}

// terminalPhase is the phase of a pod whose containers were all stopped:
// Succeeded only if every container exited 0.
func terminalPhase(statuses []v1.ContainerStatus) v1.PodPhase {
	for _, st := range statuses {
		t := st.State.Terminated
		if t == nil {
			t = st.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

func initDone(pod *v1.Pod, rt *kuberuntime.PodStatus) bool {
	for i := range pod.Spec.Containers {
		if rt.FindContainer(pod.Spec.Containers[i].Name) != nil {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := rt.FindContainer(c.Name)
		if podutil.IsRestartableInitContainer(c) {
			if st == nil || st.State != kuberuntime.StateRunning {
				return false
			}
			continue
		}
		if st == nil || st.State != kuberuntime.StateExited || st.ExitCode != 0 {
			return false
		}
	}
	return true
}

func (in Input) containerID(id string) string {
	if id == "" {
		return ""
	}
	name := in.RuntimeName
	if name == "" {
		name = "containerd"
	}
	return name + "://" + id
}

func (in Input) terminated(c *kuberuntime.ContainerStatus) *v1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" {
		reason = "Error"
		if c.ExitCode == 0 {
			reason = "Completed"
		}
	}
	return &v1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      reason,
		Message:     c.Message,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: in.containerID(c.ID),
	}
}

// containerStatus is c's status; podInitializing picks the waiting reason of
// a container not created yet, isInit says c is an init container.
func (in Input) containerStatus(c *v1.Container, podInitializing, isInit bool) v1.ContainerStatus {
	rt := in.Runtime
	if rt == nil {
		rt = &kuberuntime.PodStatus{}
	}
	latest := rt.FindContainer(c.Name)
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	f, hasFailure := in.Failures[c.Name]
	waiting := func(reason, msg string) v1.ContainerState {
		if hasFailure {
			reason, msg = f.Reason, f.Message
		}
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	started := false
	cs.Started = &started
	if latest == nil {
		reason := kuberuntime.ReasonContainerCreating
		if podInitializing {
			reason = kuberuntime.ReasonPodInitializing
		}
		cs.State = waiting(reason, "")
		return cs
	}
	cs.RestartCount = int32(latest.RestartCount)
	cs.ImageID = latest.ImageRef
	if latest.Image != "" {
		cs.Image = latest.Image
	}
	cs.ContainerID = in.containerID(latest.ID)
	// As upstream (InPlacePodVerticalScaling): what the container was
	// allocated, and what it runs with.
	cs.AllocatedResources = c.Resources.Requests.DeepCopy()
	cs.Resources = statusResources(c.Resources, latest, actuatedOf(in.Actuated, c.Name), in.oldStatus(c.Name, isInit), cs.ContainerID)
	if prev := rt.PreviousContainer(c.Name); prev != nil && prev.State == kuberuntime.StateExited {
		cs.LastTerminationState = v1.ContainerState{Terminated: in.terminated(prev)}
	}
	switch latest.State {
	case kuberuntime.StateRunning:
		started = in.Started == nil || in.Started(c.Name)
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(latest.StartedAt)}}
		cs.Ready = in.Ready == nil || in.Ready(c.Name)
	case kuberuntime.StateExited:
		term := in.terminated(latest)
		// A pod stopped for good (deleted, evicted, shut down) restarts
		// nothing: its containers stay terminated, as upstream shows them.
		if !in.Terminal && kuberuntime.ShouldRestart(in.Pod, c, latest) {
			cs.LastTerminationState = v1.ContainerState{Terminated: term}
			cs.State = waiting(kuberuntime.ReasonCrashLoopBackOff, "")
			if !hasFailure {
				// About to be restarted, no back-off recorded yet.
				cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: kuberuntime.ReasonContainerCreating}}
			}
		} else {
			cs.State = v1.ContainerState{Terminated: term}
			// An init container that completed counts as ready, as upstream.
			cs.Ready = isInit && term.ExitCode == 0
		}
	case kuberuntime.StateCreated:
		cs.State = waiting(kuberuntime.ReasonContainerCreating, "")
	default:
		cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 137, Reason: "ContainerStatusUnknown",
			Message:     "The container could not be located when the pod was terminated",
			ContainerID: in.containerID(latest.ID),
		}}
	}
	return cs
}

// oldStatus is the container's status last reported, nil when none.
func (in Input) oldStatus(name string, isInit bool) *v1.ContainerStatus {
	list := in.Old.ContainerStatuses
	if isInit {
		list = in.Old.InitContainerStatuses
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// ephemeralStatus is a debug container's status, as upstream reports it:
// like a container's, but never restarted (an exited one stays
// terminated), and without the prober's started and ready (it has no
// probes).
func (in Input) ephemeralStatus(ec *v1.EphemeralContainer, podInitializing bool) v1.ContainerStatus {
	c := (*v1.Container)(&ec.EphemeralContainerCommon)
	cs := in.containerStatus(c, podInitializing, false)
	cs.Started, cs.Ready = nil, false
	cs.Resources, cs.AllocatedResources = nil, nil // not resizable
	if latest := in.Runtime.FindContainer(c.Name); latest != nil && latest.State == kuberuntime.StateExited {
		cs.State = v1.ContainerState{Terminated: in.terminated(latest)}
		cs.LastTerminationState = v1.ContainerState{}
	}
	return cs
}

// Phase computes the pod phase from the container statuses, as upstream.
func Phase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus) v1.PodPhase {
	spec := pod.Spec
	pendingInit := false
	for i, st := range initStatuses {
		sidecar := i < len(spec.InitContainers) && podutil.IsRestartableInitContainer(&spec.InitContainers[i])
		switch {
		case sidecar:
			if st.State.Running == nil && st.LastTerminationState.Terminated == nil && st.State.Terminated == nil {
				pendingInit = true
			}
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
		case st.State.Terminated != nil:
			if spec.RestartPolicy == v1.RestartPolicyNever {
				return v1.PodFailed
			}
			pendingInit = true
		default:
			pendingInit = true
		}
	}
	var waiting, running, stopped, succeeded int
	for _, st := range statuses {
		switch {
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	// App containers that already ran mean initialisation finished before.
	if pendingInit && running == 0 && stopped == 0 {
		return v1.PodPending
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		if spec.RestartPolicy == v1.RestartPolicyAlways {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

func (in Input) conditions(s v1.PodStatus, rt *kuberuntime.PodStatus) []v1.PodCondition {
	pod := in.Pod
	cond := func(t v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
		if ok {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, "", ""
		}
		c.LastTransitionTime = metav1.NewTime(in.Now)
		for _, old := range in.Old.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	sandboxReady := len(rt.Sandboxes) > 0 && rt.Sandboxes[0].Ready && (pod.Spec.HostNetwork || len(rt.IPs) > 0)

	var notInit []string
	for i, st := range s.InitContainerStatuses {
		sidecar := podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i])
		done := (st.State.Terminated != nil && st.State.Terminated.ExitCode == 0) || (sidecar && st.Started != nil && *st.Started)
		if !done && !initDone(pod, rt) {
			notInit = append(notInit, st.Name)
		}
	}
	var notReady []string
	for _, st := range s.ContainerStatuses {
		if !st.Ready {
			notReady = append(notReady, st.Name)
		}
	}
	for i, st := range s.InitContainerStatuses {
		if podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) && !st.Ready {
			notReady = append(notReady, st.Name)
		}
	}
	sort.Strings(notReady)
	completed := isTerminal(s.Phase)
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	if completed {
		readyReason, readyMsg = "PodCompleted", ""
	}
	containersReady := len(notReady) == 0 && !completed
	podReady, gatesReason, gatesMsg := containersReady, readyReason, readyMsg
	if containersReady {
		podReady, gatesReason, gatesMsg = ReadinessGates(pod, pod.Status.Conditions)
	}
	initReason, initMsg := "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))
	conds := []v1.PodCondition{
		cond(v1.PodReadyToStartContainers, sandboxReady, "", ""),
		cond(v1.PodInitialized, len(notInit) == 0, initReason, initMsg),
		cond(v1.PodReady, podReady, gatesReason, gatesMsg),
		cond(v1.ContainersReady, containersReady, readyReason, readyMsg),
		cond(v1.PodScheduled, true, "", ""),
	}
	conds = append(conds, in.ResizeConditions...)
	// Keep the conditions other components own (readiness gates'
	// conditions, ...) as the API server has them.
	for _, c := range pod.Status.Conditions {
		if !KubeletCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	return conds
}

// KubeletCondition reports whether the kubelet owns pod conditions of type t;
// other components own the rest (readiness gates' conditions, ...).
func KubeletCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled,
		v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

// ReadinessGates evaluates pod.spec.readinessGates against conditions (the
// pod's conditions as the API server has them, set by other controllers):
// ok only when every gate's condition is True, else reason
// ReadinessGatesNotReady and upstream's message. It is pure.
func ReadinessGates(pod *v1.Pod, conditions []v1.PodCondition) (ok bool, reason, message string) {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		c := findCondition(conditions, g.ConditionType)
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
		}
	}
	if len(msgs) > 0 {
		return false, "ReadinessGatesNotReady", strings.Join(msgs, ", ")
	}
	return true, "", ""
}

// NeedsReadinessSync reports whether the Ready condition the API server has
// for pod disagrees with its readiness gates' conditions there, so that a
// status change made by someone else (a condition patched by a controller)
// calls for a new status. Pods without gates, or without a Ready condition
// yet, never do. It is pure.
func NeedsReadinessSync(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	ready := findCondition(pod.Status.Conditions, v1.PodReady)
	if ready == nil {
		return false
	}
	containers := findCondition(pod.Status.Conditions, v1.ContainersReady)
	if containers == nil || containers.Status != v1.ConditionTrue {
		return false // Ready follows ContainersReady, whatever the gates say
	}
	ok, _, msg := ReadinessGates(pod, pod.Status.Conditions)
	want := v1.ConditionFalse
	if ok {
		want = v1.ConditionTrue
	}
	return ready.Status != want || ready.Message != msg
}

func findCondition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
