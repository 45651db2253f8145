package shutdown

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Upstream's reasons and messages.
const (
	// ReasonNotAdmitted and messageNotAdmitted reject pods while the node
	// shuts down.
	ReasonNotAdmitted  = "NodeShutdown"
	messageNotAdmitted = "Pod was rejected as the node is shutting down."
	// ReasonTerminated and MessageTerminated are a killed pod's status.
	ReasonTerminated  = "Terminated"
	MessageTerminated = "Pod was terminated in response to imminent node shutdown."
	// EventNodeShutdown is the Node event of a shutdown or its cancellation.
	EventNodeShutdown = "NodeShutdown"
	// stateFile in the root directory holds the last shutdown's times.
	stateFile = "graceful_node_shutdown_state"
	// defaultPriority is the priority of a pod without one (upstream's
	// DefaultPriorityWhenNoDefaultClassExists).
	defaultPriority int32 = 0
)

// Period is one priority class's share of the shutdown:
// shutdownGracePeriodByPodPriority's entries.
type Period = kubeletconfig.ShutdownGracePeriodByPodPriority

// Periods turns the configuration into the periods, lowest priority
// first, as upstream: shutdownGracePeriodByPodPriority when set, else
// shutdownGracePeriod split into the regular pods' share and
// shutdownGracePeriodCriticalPods. None means graceful shutdown is off.
func Periods(cfg *kubeletconfig.KubeletConfiguration) []Period {
	periods := slices.Clone(cfg.ShutdownGracePeriodByPodPriority)
	if len(periods) == 0 {
		periods = migrateConfig(cfg.ShutdownGracePeriod.Duration, cfg.ShutdownGracePeriodCriticalPods.Duration)
	}
	sort.Slice(periods, func(i, j int) bool { return periods[i].Priority < periods[j].Priority })
	return periods
}

// migrateConfig is upstream's: total minus critical for regular pods,
// critical for system-critical ones.
func migrateConfig(total, critical time.Duration) []Period {
	if total == 0 {
		return nil
	}
	regular := total - critical
	if regular < 0 {
		return nil
	}
	return []Period{
		{Priority: defaultPriority, ShutdownGracePeriodSeconds: int64(regular / time.Second)},
		{Priority: podutil.SystemCriticalPriority, ShutdownGracePeriodSeconds: int64(critical / time.Second)},
	}
}

// PeriodRequested is the whole shutdown: the sum of the periods, what
// logind's InhibitDelayMaxSec must allow.
func PeriodRequested(periods []Period) time.Duration {
	var sum int64
	for _, p := range periods {
		sum += p.ShutdownGracePeriodSeconds
	}
	return time.Duration(sum) * time.Second
}

// Group is the pods stopped together, within Period.
type Group struct {
	Period
	Pods []*v1.Pod
}

// GroupByPriority puts each pod in the group of the highest period whose
// priority is not above its own (the lowest when none is), as upstream;
// periods must be sorted. Groups keep the periods' order.
func GroupByPriority(periods []Period, pods []*v1.Pod) []Group {
	groups := make([]Group, len(periods))
	for i, p := range periods {
		groups[i].Period = p
	}
	if len(groups) == 0 {
		return groups
	}
	for _, pod := range pods {
		var priority int32
		if pod.Spec.Priority != nil {
			priority = *pod.Spec.Priority
		}
		i := sort.Search(len(groups), func(i int) bool { return groups[i].Priority >= priority })
		switch {
		case i == len(groups):
			i = len(groups) - 1
		case i > 0 && groups[i].Priority > priority:
			i--
		}
		groups[i].Pods = append(groups[i].Pods, pod)
	}
	return groups
}

// GracePeriod is how long pod gets in a group of groupSeconds: its own
// terminationGracePeriodSeconds when that is shorter.
func GracePeriod(pod *v1.Pod, groupSeconds int64) int64 {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g <= groupSeconds {
		return *g
	}
	return groupSeconds
}

// TerminatedStatus is cur once the shutdown killed the pod, as upstream:
// phase Failed (unless it had Succeeded), reason Terminated, the message,
// and the DisruptionTarget condition saying the kubelet terminated it.
func TerminatedStatus(cur v1.PodStatus, generation int64, now time.Time) v1.PodStatus {
	out := *cur.DeepCopy()
	if out.Phase != v1.PodSucceeded {
		out.Phase = v1.PodFailed
	}
	out.Reason, out.Message = ReasonTerminated, MessageTerminated
	cond := v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: MessageTerminated, LastTransitionTime: metav1.NewTime(now), ObservedGeneration: generation,
	}
	for i, c := range out.Conditions {
		if c.Type == v1.DisruptionTarget {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			out.Conditions[i] = cond
			return out
		}
	}
	out.Conditions = append(out.Conditions, cond)
	return out
}
