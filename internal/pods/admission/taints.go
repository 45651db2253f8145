package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// hasUntoleratedNoExecuteTaint reports whether the node carries a NoExecute
// taint that none of the pod's tolerations tolerates. The kubelet ignores
// NoSchedule and PreferNoSchedule taints: the scheduler owns those. The
// numeric Lt/Gt toleration operators stay off, as their feature gate
// (TaintTolerationComparisonOperators, alpha) is off by default.
func hasUntoleratedNoExecuteTaint(pod *v1.Pod, node *v1.Node) bool {
	logger := klog.Background()
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(logger, taint, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return true
		}
	}
	return false
}
