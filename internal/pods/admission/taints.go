package admission

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// hasUntoleratedNoExecuteTaint reports whether the node carries a NoExecute
// taint that none of the pod's tolerations tolerates, with component-helpers'
// matcher as upstream's admission. The kubelet ignores NoSchedule and
// PreferNoSchedule taints: the scheduler owns those. The numeric Lt/Gt
// toleration operators stay off, as their feature gate
// (TaintTolerationComparisonOperators, alpha) is off by default.
func hasUntoleratedNoExecuteTaint(pod *v1.Pod, node *v1.Node) bool {
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }, false)
	return untolerated
}
