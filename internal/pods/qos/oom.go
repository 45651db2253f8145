package qos

import (
	v1 "k8s.io/api/core/v1"
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

const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configMirrorAnnotation = "kubernetes.io/config.mirror"
	apiserverSource        = "api"
	systemCriticalPriority = int32(2_000_000_000)
	systemNodeCritical     = "system-node-critical"
)

// ContainerOOMScoreAdjust returns the oom_score_adj for a container of pod on
// a node with memoryCapacity bytes. Node-critical and Guaranteed containers
// get -997, BestEffort 1000, and Burstable ones 1000 - 1000*request/capacity
// (pod-level memory requests left unassigned to containers are shared equally
// among them; a sidecar never scores above the pod's smallest regular
// container), clamped to [3, 999] so Burstable stays between the other two.
func ContainerOOMScoreAdjust(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	if IsNodeCriticalPod(pod) {
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
	if IsPodLevelRequestsSet(pod) {
		share = unassignedMemoryPerContainer(pod)
	}
	adj := 1000 - 1000*(c.Resources.Requests.Memory().Value()+share)/memoryCapacity
	if IsSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
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
	claimed := aggregate(&pod.Spec, func(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests })
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

// IsStaticPod reports whether the pod came from a file or URL source rather
// than the API server.
func IsStaticPod(pod *v1.Pod) bool {
	src, ok := pod.Annotations[configSourceAnnotation]
	return ok && src != apiserverSource
}

// IsMirrorPod reports whether the pod is the API server's mirror of a static pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[configMirrorAnnotation]
	return ok
}

// IsCriticalPod reports whether the pod is static, mirrored, or has a
// system-critical priority.
func IsCriticalPod(pod *v1.Pod) bool {
	if IsStaticPod(pod) || IsMirrorPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// IsNodeCriticalPod reports whether the pod is critical and uses the
// system-node-critical priority class.
func IsNodeCriticalPod(pod *v1.Pod) bool {
	return IsCriticalPod(pod) && pod.Spec.PriorityClassName == systemNodeCritical
}
