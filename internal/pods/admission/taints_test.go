package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestHasUntoleratedNoExecuteTaint(t *testing.T) {
	noExec := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}
	tests := []struct {
		name        string
		taints      []v1.Taint
		tolerations []v1.Toleration
		want        bool
	}{
		{name: "no taints"},
		{name: "untolerated", taints: []v1.Taint{noExec}, want: true},
		{name: "Equal with the value", taints: []v1.Taint{noExec},
			tolerations: []v1.Toleration{{Key: "dedicated", Value: "db"}}},
		{name: "Equal with another value", taints: []v1.Taint{noExec},
			tolerations: []v1.Toleration{{Key: "dedicated", Value: "web"}}, want: true},
		{name: "Exists on the key", taints: []v1.Taint{noExec},
			tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}},
		{name: "Exists without a key tolerates everything", taints: []v1.Taint{noExec},
			tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}}},
		{name: "toleration for another effect", taints: []v1.Taint{noExec},
			tolerations: []v1.Toleration{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}, want: true},
		{name: "numeric operators are off", taints: []v1.Taint{{Key: "level", Value: "5", Effect: v1.TaintEffectNoExecute}},
			tolerations: []v1.Toleration{{Key: "level", Operator: v1.TolerationOpGt, Value: "1"}}, want: true},
		{name: "only NoExecute counts", taints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}}},
		{name: "every NoExecute taint must be tolerated",
			taints:      []v1.Taint{noExec, {Key: "other", Effect: v1.TaintEffectNoExecute}},
			tolerations: []v1.Toleration{{Key: "dedicated", Value: "db"}}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("p", nil, func(p *v1.Pod) { p.Spec.Tolerations = tc.tolerations })
			node := testNode(func(n *v1.Node) { n.Spec.Taints = tc.taints })
			if got := hasUntoleratedNoExecuteTaint(pod, node); got != tc.want {
				t.Errorf("hasUntoleratedNoExecuteTaint() = %v, want %v", got, tc.want)
			}
		})
	}
}
