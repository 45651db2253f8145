package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// fieldNodeName is the only node field a nodeSelectorTerm's matchFields can
// name.
const fieldNodeName = "metadata.name"

// requiredNodeAffinityMatches reports whether the node satisfies both the
// pod's nodeSelector (every pair present with an equal value) and its
// requiredDuringSchedulingIgnoredDuringExecution node affinity.
func requiredNodeAffinityMatches(pod *v1.Pod, node *v1.Node) bool {
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	return nodeSelectorMatches(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node)
}

// nodeSelectorMatches ORs the selector's terms. Terms with neither
// expressions nor fields are skipped, so a selector with no other term
// matches no node; a term that does not parse matches nothing.
func nodeSelectorMatches(ns *v1.NodeSelector, node *v1.Node) bool {
	for i := range ns.NodeSelectorTerms {
		t := &ns.NodeSelectorTerms[i]
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		if termMatches(t, node) {
			return true
		}
	}
	return false
}

// termMatches ANDs a term's label expressions and field expressions. Field
// expressions are ignored for a node without a name, as upstream does.
func termMatches(t *v1.NodeSelectorTerm, node *v1.Node) bool {
	if len(t.MatchExpressions) > 0 {
		reqs, ok := labelRequirements(t.MatchExpressions)
		if !ok {
			return false
		}
		set := labels.Set(node.Labels)
		for i := range reqs {
			if !reqs[i].Matches(set) {
				return false
			}
		}
	}
	if len(t.MatchFields) > 0 {
		matches, ok := fieldsMatch(t.MatchFields, node.Name)
		if !ok {
			return false
		}
		if node.Name != "" && !matches {
			return false
		}
	}
	return true
}

// labelRequirements parses node selector requirements into label
// requirements; ok is false when any is invalid (unknown operator, bad key
// or value, wrong number of values, non-integer Gt/Lt value).
func labelRequirements(exprs []v1.NodeSelectorRequirement) ([]labels.Requirement, bool) {
	out := make([]labels.Requirement, 0, len(exprs))
	for _, e := range exprs {
		var op selection.Operator
		switch e.Operator {
		case v1.NodeSelectorOpIn:
			op = selection.In
		case v1.NodeSelectorOpNotIn:
			op = selection.NotIn
		case v1.NodeSelectorOpExists:
			op = selection.Exists
		case v1.NodeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		case v1.NodeSelectorOpGt:
			op = selection.GreaterThan
		case v1.NodeSelectorOpLt:
			op = selection.LessThan
		default:
			return nil, false
		}
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return nil, false
		}
		out = append(out, *r)
	}
	return out, true
}

// fieldsMatch evaluates matchFields against the node name: In and NotIn with
// exactly one value each. A key other than metadata.name reads as empty.
// ok is false when a requirement is invalid.
func fieldsMatch(exprs []v1.NodeSelectorRequirement, nodeName string) (matches, ok bool) {
	matches = true
	for _, e := range exprs {
		if len(e.Values) != 1 {
			return false, false
		}
		got := ""
		if e.Key == fieldNodeName {
			got = nodeName
		}
		switch e.Operator {
		case v1.NodeSelectorOpIn:
			matches = matches && got == e.Values[0]
		case v1.NodeSelectorOpNotIn:
			matches = matches && got != e.Values[0]
		default:
			return false, false
		}
	}
	return matches, true
}
