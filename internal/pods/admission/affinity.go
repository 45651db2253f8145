package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// requiredNodeAffinityMatches reports whether the node satisfies both the
// pod's nodeSelector and its requiredDuringSchedulingIgnoredDuringExecution
// node affinity, with component-helpers' matcher as upstream's NodeAffinity
// filter: terms are ORed, empty terms match nothing, a term that does not
// parse matches nothing (parse errors are ignored, for compatibility).
func requiredNodeAffinityMatches(pod *v1.Pod, node *v1.Node) bool {
	match, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return match
}
