package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/qos"
)

// Reason is the pod status reason and event reason of an eviction, and
// the reason admission gives when pressure keeps a pod out.
const Reason = "Evicted"

// Keys of the annotations on the Evicted event, as upstream.
const (
	OffendingContainersKey      = "offending_containers"
	OffendingContainersUsageKey = "offending_containers_usage"
	OffendingPodKey             = "offending_pod"
	OffendingPodUsageKey        = "offending_pod_usage"
	StarvedResourceKey          = "starved_resource"
)

// Message explains an eviction as upstream words it, e.g. "The node was
// low on resource: memory. Threshold quantity: 100Mi, available: 90Mi.
// Container hog was using 300Mi, request is 0, has larger consumption of
// memory. ", and returns the event annotations naming the containers.
func Message(res v1.ResourceName, pod *v1.Pod, stats PodStats, act []evictionapi.Threshold, obs Observations) (string, map[string]string) {
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. ", res)
	for _, t := range act {
		if evictionapi.ResourceOf(t.Signal) != res {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			q := t.Value.Amount(o.Capacity)
			fmt.Fprintf(&b, "Threshold quantity: %s, available: %s. ", q.String(), o.Available.String())
			break
		}
	}
	ann := map[string]string{}
	ps, ok := stats[pod.UID]
	if !ok {
		return b.String(), ann
	}
	if res == v1.ResourceMemory && resourcehelper.IsPodLevelResourcesSet(pod) && ps.Memory != nil {
		if req, ok := pod.Spec.Resources.Requests[res]; ok {
			u := workingSet(ps.Memory)
			fmt.Fprintf(&b, "Pod %s was using %s, request is %s, has larger consumption of %s. ", pod.Name, u.String(), req.String(), res)
			ann[OffendingPodKey] = pod.Name
			ann[OffendingPodUsageKey] = u.String()
		}
	}
	containers := append(append([]v1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
	var names, usages []string
	for _, cs := range ps.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[res]
			u := containerUsage(res, cs)
			if u != nil && u.Cmp(req) > 0 {
				fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %s. ", c.Name, u.String(), req.String(), res)
				names = append(names, c.Name)
				usages = append(usages, u.String())
			}
			break
		}
	}
	ann[OffendingContainersKey] = strings.Join(names, ",")
	ann[OffendingContainersUsageKey] = strings.Join(usages, ",")
	ann[StarvedResourceKey] = string(res)
	return b.String(), ann
}

func containerUsage(res v1.ResourceName, cs statsapi.ContainerStats) *resource.Quantity {
	switch res {
	case v1.ResourceMemory:
		if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
			return resource.NewQuantity(int64(*cs.Memory.WorkingSetBytes), resource.BinarySI)
		}
	case v1.ResourceEphemeralStorage:
		if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
			return resource.NewQuantity(int64(*cs.Rootfs.UsedBytes+*cs.Logs.UsedBytes), resource.BinarySI)
		}
	}
	return nil
}

// GracePeriod is the grace period an eviction gives the pod: 1 second for
// a hard threshold (upstream's immediate eviction), for a soft one the
// smaller of evictionMaxPodGracePeriod and the pod's own (a negative
// maximum defers to the pod, as the flag documents).
func GracePeriod(t evictionapi.Threshold, pod *v1.Pod, maxPodGracePeriod int64) int64 {
	if t.Hard() {
		return immediateGracePeriod
	}
	if maxPodGracePeriod < 0 {
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			return *pod.Spec.TerminationGracePeriodSeconds
		}
		return v1.DefaultTerminationGracePeriodSeconds
	}
	g := maxPodGracePeriod
	if pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds < g {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	return g
}

// Admit decides whether a new pod may start under the node conditions
// the manager reports: always without pressure and for critical pods;
// under memory pressure alone every pod but BestEffort ones that do not
// tolerate the memory-pressure taint; under any other pressure none.
func Admit(pod *v1.Pod, conditions []v1.NodeConditionType) (ok bool, reason, message string) {
	if len(conditions) == 0 || podutil.IsCriticalPod(pod) {
		return true, "", ""
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if qos.PodQOSClass(pod) != v1.PodQOSBestEffort {
			return true, "", ""
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
				return true, "", ""
			}
		}
	}
	return false, Reason, fmt.Sprintf("The node had condition: %v. ", conditions)
}
