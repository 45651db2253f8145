package podutil

import (
	v1 "k8s.io/api/core/v1"
)

// Annotations the kubelet maintains on the pods it learns about.
const (
	// ConfigSourceAnnotationKey records which source a pod came from.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigMirrorAnnotationKey marks a mirror pod; its value is the static
	// pod's hash.
	ConfigMirrorAnnotationKey = v1.MirrorPodAnnotationKey
	// ConfigFirstSeenAnnotationKey records when the kubelet first saw a pod
	// (RFC3339Nano). It is kept across updates of the same UID.
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	// ConfigHashAnnotationKey records the UID generated for a static pod.
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
)

// ApiserverSource is the config.source of pods read from the API server;
// every other source (file, http) makes a static pod.
const ApiserverSource = "api"

// Upstream's critical priorities (pkg/apis/scheduling).
const (
	// SystemCriticalPriority is the lowest priority of a critical pod.
	SystemCriticalPriority int32 = 2 * 1_000_000_000
	// SystemNodeCritical is the priority class of node-critical pods.
	SystemNodeCritical = "system-node-critical"
)

// IsStaticPod reports whether the pod came from a file or URL source: it
// carries a config.source annotation (even an empty one) other than "api".
func IsStaticPod(pod *v1.Pod) bool {
	src, ok := pod.Annotations[ConfigSourceAnnotationKey]
	return ok && src != ApiserverSource
}

// IsMirrorPod reports whether the pod is the API server's mirror of a static
// pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// IsMirrorOf reports whether mirror is the mirror pod of this version of
// the static pod: its mirror annotation carries the static pod's hash.
func IsMirrorOf(mirror, static *v1.Pod) bool {
	h, ok := mirror.Annotations[ConfigMirrorAnnotationKey]
	return ok && h == static.Annotations[ConfigHashAnnotationKey]
}

// IsCriticalPod reports whether the pod is static, a mirror pod, or has at
// least the system-critical priority.
func IsCriticalPod(pod *v1.Pod) bool {
	if IsStaticPod(pod) || IsMirrorPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// IsNodeCriticalPod reports whether the pod is critical and uses the
// system-node-critical priority class.
func IsNodeCriticalPod(pod *v1.Pod) bool {
	return IsCriticalPod(pod) && pod.Spec.PriorityClassName == SystemNodeCritical
}
