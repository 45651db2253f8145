package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestRequiredNodeAffinityMatches(t *testing.T) {
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	labelsTerm := func(exprs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: exprs}
	}
	fieldsTerm := func(exprs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchFields: exprs}
	}
	required := func(terms ...v1.NodeSelectorTerm) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
			}}
		}
	}
	selector := func(kv ...string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				p.Spec.NodeSelector[kv[i]] = kv[i+1]
			}
		}
	}
	nameless := func(n *v1.Node) { n.Name = "" }

	tests := []struct {
		name string
		pod  func(*v1.Pod)
		node *v1.Node
		want bool
	}{
		{name: "no constraints", pod: func(*v1.Pod) {}, want: true},
		{name: "node selector matches", pod: selector("zone", "z1", "cores", "8"), want: true},
		{name: "node selector value differs", pod: selector("zone", "z2"), want: false},
		{name: "node selector label missing", pod: selector("rack", ""), want: false},
		{name: "In", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpIn, "z0", "z1"))), want: true},
		{name: "In without the value", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpIn, "z2"))), want: false},
		{name: "NotIn", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpNotIn, "z2"))), want: true},
		{name: "NotIn with the value", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpNotIn, "z1"))), want: false},
		{name: "NotIn on a missing label", pod: required(labelsTerm(expr("rack", v1.NodeSelectorOpNotIn, "r1"))), want: true},
		{name: "Exists", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpExists))), want: true},
		{name: "Exists on a missing label", pod: required(labelsTerm(expr("rack", v1.NodeSelectorOpExists))), want: false},
		{name: "DoesNotExist", pod: required(labelsTerm(expr("rack", v1.NodeSelectorOpDoesNotExist))), want: true},
		{name: "DoesNotExist on a present label", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpDoesNotExist))), want: false},
		{name: "Gt", pod: required(labelsTerm(expr("cores", v1.NodeSelectorOpGt, "4"))), want: true},
		{name: "Gt equal is false", pod: required(labelsTerm(expr("cores", v1.NodeSelectorOpGt, "8"))), want: false},
		{name: "Lt", pod: required(labelsTerm(expr("cores", v1.NodeSelectorOpLt, "16"))), want: true},
		{name: "Lt on a non-integer label", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpLt, "16"))), want: false},
		{name: "Gt with a non-integer value is invalid", pod: required(labelsTerm(expr("cores", v1.NodeSelectorOpGt, "four"))), want: false},
		{name: "Exists with values is invalid", pod: required(labelsTerm(expr("zone", v1.NodeSelectorOpExists, "z1"))), want: false},
		{name: "unknown operator is invalid", pod: required(labelsTerm(expr("zone", "Like", "z1"))), want: false},
		{name: "expressions in a term are ANDed", pod: required(labelsTerm(
			expr("zone", v1.NodeSelectorOpIn, "z1"), expr("cores", v1.NodeSelectorOpGt, "16"))), want: false},
		{name: "terms are ORed", pod: required(
			labelsTerm(expr("zone", v1.NodeSelectorOpIn, "z2")), labelsTerm(expr("zone", v1.NodeSelectorOpIn, "z1"))), want: true},
		{name: "an invalid term does not spoil a valid one", pod: required(
			labelsTerm(expr("zone", v1.NodeSelectorOpGt, "x")), labelsTerm(expr("zone", v1.NodeSelectorOpExists))), want: true},
		{name: "only empty terms match nothing", pod: required(v1.NodeSelectorTerm{}), want: false},
		{name: "no terms match nothing", pod: required(), want: false},
		{name: "field In", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpIn, "node-a"))), want: true},
		{name: "field In another node", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpIn, "node-b"))), want: false},
		{name: "field NotIn", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpNotIn, "node-b"))), want: true},
		{name: "field NotIn this node", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpNotIn, "node-a"))), want: false},
		{name: "field with two values is invalid", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpIn, "node-a", "node-b"))), want: false},
		{name: "field Exists is invalid", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpExists))), want: false},
		{name: "fields are ignored for a nameless node", pod: required(fieldsTerm(expr("metadata.name", v1.NodeSelectorOpIn, "node-b"))),
			node: testNode(nameless), want: true},
		{name: "labels and fields in a term are ANDed", pod: required(v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "z1")},
			MatchFields:      []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "node-b")},
		}), want: false},
		{name: "selector and affinity are ANDed", pod: func(p *v1.Pod) {
			selector("zone", "z2")(p)
			required(labelsTerm(expr("zone", v1.NodeSelectorOpExists)))(p)
		}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			if node == nil {
				node = testNode()
			}
			pod := testPod("p", nil, tc.pod)
			if got := requiredNodeAffinityMatches(pod, node); got != tc.want {
				t.Errorf("requiredNodeAffinityMatches() = %v, want %v", got, tc.want)
			}
		})
	}
}
