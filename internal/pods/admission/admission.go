package admission

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Result is the admission verdict. Reason is a single CamelCase word suitable
// for status.reason; Message explains it. Both are empty when Admit is true.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

// Reasons the kubelet puts on a pod it rejects, as upstream spells them.
// Insufficient resources use "OutOf" followed by the resource name, e.g.
// "OutOfcpu" or "OutOfexample.com/gpu".
const (
	ReasonOSSelectorMismatch         = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported             = "PodOSNotSupported"
	ReasonSupplementalGroupsPolicy   = "SupplementalGroupsPolicyNotSupported"
	ReasonInsufficientResourcePrefix = "OutOf"
	ReasonNodeAffinity               = "NodeAffinity"
	ReasonNodeName                   = "NodeName"
	ReasonNodePorts                  = "NodePorts"
	ReasonTaintToleration            = "TaintToleration"
)

const (
	messageOSSelectorMismatch = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	messageOSNotSupported     = "Failed to admit pod as the OS field doesn't match node OS"
	descNodeAffinity          = "node(s) didn't match Pod's node affinity/selector"
	descNodeName              = "node(s) didn't match the requested node name"
	descNodePorts             = "node(s) didn't have free ports for the requested pod ports"
	descTaintToleration       = "node(s) had taints that the pod didn't tolerate"

	labelOS = "kubernetes.io/os"
)

// failure is one failed check. resource marks an insufficient resource,
// which upstream lets a critical pod overcome by preemption.
type failure struct {
	reason, message string
	resource        bool
}

func predicateFailure(name, desc string) failure {
	return failure{reason: name, message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// Admit decides whether pod may run on node next to the pods already
// admitted. admitted must hold only active pods (admitted, not terminated),
// with the resources the node allocated to them; an entry with pod's UID is
// ignored. Checks run in upstream's order and the first failure is reported:
// OS label and OS field, supplemental groups policy, then resources (pods,
// cpu, memory, ephemeral-storage, then other resources by name), node
// selector and affinity, node name, host ports, and NoExecute taints (not
// for static pods).
//
// A nil node (the API server not reached yet) admits on the OS and host port
// checks alone; upstream always has a node, built locally when needed.
//
// When node affinity is the only failure, upstream re-reads the node from the
// API server and checks again; a caller holding a cached node may do the same
// on ReasonNodeAffinity.
//
// Upstream evicts pods to make room for a critical pod that only lacks
// resources. This package does not preempt: a critical pod that fails for a
// non-resource reason reports that reason, as upstream does, and one that
// only lacks resources is rejected with the first resource failure.
func Admit(pod *v1.Pod, node *v1.Node, admitted []*v1.Pod) Result {
	others := withoutPod(admitted, pod)
	if r, ok := osCheck(pod); !ok {
		return r
	}
	if node == nil {
		if !portsFit(pod, others) {
			return reject(predicateFailure(ReasonNodePorts, descNodePorts))
		}
		return Result{Admit: true}
	}
	if !supplementalGroupsPolicySupported(pod, node) {
		return Result{
			Reason:  ReasonSupplementalGroupsPolicy,
			Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict),
		}
	}
	failures := generalFailures(pod, node, others)
	if len(failures) == 0 {
		return Result{Admit: true}
	}
	if podutil.IsCriticalPod(pod) {
		for _, f := range failures {
			if !f.resource {
				return reject(f)
			}
		}
	}
	return reject(failures[0])
}

func reject(f failure) Result { return Result{Reason: f.reason, Message: f.message} }

// generalFailures runs the scheduler-shared predicates and the taint check,
// returning every failure in upstream's order.
func generalFailures(pod *v1.Pod, node *v1.Node, others []*v1.Pod) []failure {
	failures := resourceFailures(withoutMissingExtendedResources(pod, node), node, others)
	if !requiredNodeAffinityMatches(pod, node) {
		failures = append(failures, predicateFailure(ReasonNodeAffinity, descNodeAffinity))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		failures = append(failures, predicateFailure(ReasonNodeName, descNodeName))
	}
	if !portsFit(pod, others) {
		failures = append(failures, predicateFailure(ReasonNodePorts, descNodePorts))
	}
	if !podutil.IsStaticPod(pod) && hasUntoleratedNoExecuteTaint(pod, node) {
		failures = append(failures, predicateFailure(ReasonTaintToleration, descTaintToleration))
	}
	return failures
}

// withoutPod drops nil entries and the entry for pod itself (same UID), as
// upstream filters the pod being evaluated out of the admitted set.
func withoutPod(admitted []*v1.Pod, pod *v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(admitted))
	for _, p := range admitted {
		if p == nil || (pod.UID != "" && p.UID == pod.UID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// osCheck compares the pod's kubernetes.io/os label and spec.os with the OS
// this kubelet runs on. Upstream compares the label with the node's label
// after forcing that label to the running OS, so the running OS decides.
func osCheck(pod *v1.Pod) (Result, bool) {
	if os, ok := pod.Labels[labelOS]; ok && os != runtime.GOOS {
		return Result{Reason: ReasonOSSelectorMismatch, Message: messageOSSelectorMismatch}, false
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return Result{Reason: ReasonOSNotSupported, Message: messageOSNotSupported}, false
	}
	return Result{}, true
}

// supplementalGroupsPolicySupported is false only for a pod asking for the
// Strict policy on a node whose status does not declare support for it.
func supplementalGroupsPolicySupported(pod *v1.Pod, node *v1.Node) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return true
	}
	f := node.Status.Features
	return f != nil && f.SupplementalGroupsPolicy != nil && *f.SupplementalGroupsPolicy
}
