package qos

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// OOM score adjustments, as the upstream kubelet assigns them.
const (
	// KubeletOOMScoreAdj is the kubelet's own adjustment.
	KubeletOOMScoreAdj = -999
	// GuaranteedOOMScoreAdj is given to Guaranteed and node-critical containers.
	GuaranteedOOMScoreAdj = -997
	// BestEffortOOMScoreAdj is given to BestEffort containers.
	BestEffortOOMScoreAdj = 1000
)

// ContainerOOMScoreAdjust returns the oom_score_adj for a container of pod on
// a node with memoryCapacity bytes. Node-critical and Guaranteed containers
// get -997, BestEffort 1000, and Burstable ones 1000 - 1000*request/capacity
// (pod-level memory requests left unassigned to containers are shared equally
// among them; a sidecar never scores above the pod's smallest regular
// container), clamped to [3, 999] so Burstable stays between the other two.
func ContainerOOMScoreAdjust(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	if podutil.IsNodeCriticalPod(pod) {
		return GuaranteedOOMScoreAdj
	}
	switch PodQOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return BestEffortOOMScoreAdj - 1
	}
	var share int64
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		share = unassignedMemoryPerContainer(pod)
	}
	adj := 1000 - 1000*(c.Resources.Requests.Memory().Value()+share)/memoryCapacity
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		minAdj := 1000 - 1000*(minRegularMemoryRequest(pod)+share)/memoryCapacity
		if adj > minAdj {
			adj = minAdj
		}
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj == BestEffortOOMScoreAdj {
		return BestEffortOOMScoreAdj - 1
	}
	return int(adj)
}

// unassignedMemoryPerContainer splits the pod-level memory request that no
// container claims equally among all init and regular containers.
func unassignedMemoryPerContainer(pod *v1.Pod) int64 {
	podReq := pod.Spec.Resources.Requests.Memory()
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if podReq.IsZero() || n == 0 {
		return 0
	}
	claimed := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return (podReq.Value() - claimed.Memory().Value()) / n
}

func minRegularMemoryRequest(pod *v1.Pod) int64 {
	least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
	for i := 1; i < len(pod.Spec.Containers); i++ {
		if v := pod.Spec.Containers[i].Resources.Requests.Memory().Value(); v < least {
			least = v
		}
	}
	return least
}

// isSidecar reports whether c is one of the pod's restartable init
// containers.
func isSidecar(pod *v1.Pod, c *v1.Container) bool {
	if !podutil.IsRestartableInitContainer(c) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}
