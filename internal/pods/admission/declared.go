package admission

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// ReasonFeatureUnsupported is upstream's reason for a pod that needs a
// node feature the node does not declare (lifecycle.PodFeatureUnsupported).
const ReasonFeatureUnsupported = "PodFeatureUnsupported"

// DeclaredFeatures is upstream's declared features admit handler
// (KEP-5328): a pod whose spec needs a node feature (the shared library's
// inference, e.g. a RestartAllContainers restart rule) that this node does
// not declare is rejected, naming the features.
type DeclaredFeatures struct {
	fw       *ndf.Framework
	declared ndf.FeatureSet
	version  *version.Version
}

// NewDeclaredFeatures checks pods against declared (the Node's
// declaredFeatures, sorted) for a kubelet of kubeletVersion.
func NewDeclaredFeatures(declared []string, kubeletVersion *version.Version) (*DeclaredFeatures, error) {
	fw := ndf.DefaultFramework
	set, err := fw.MapSorted(declared)
	if err != nil {
		return nil, fmt.Errorf("declared features %v: %w", declared, err)
	}
	return &DeclaredFeatures{fw: fw, declared: set, version: kubeletVersion}, nil
}

var _ PodAdmitter = (*DeclaredFeatures)(nil)

// Admit rejects pod when it needs node features that are not declared.
func (d *DeclaredFeatures) Admit(pod *v1.Pod) (ok bool, reason, message string) {
	reqs, err := d.fw.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, d.version)
	if err != nil {
		return false, ReasonFeatureUnsupported, fmt.Sprintf("Failed to infer pod's feature requirements: %v", err)
	}
	if reqs.IsEmpty() {
		return true, "", ""
	}
	m, err := d.fw.MatchNodeFeatureSet(reqs, d.declared)
	if err != nil {
		return false, ReasonFeatureUnsupported, fmt.Sprintf("Failed to match pod's feature requirements against the node: %v", err)
	}
	if !m.IsMatch {
		return false, ReasonFeatureUnsupported, fmt.Sprintf("Pod requires node features that are not available: %s", strings.Join(m.UnsatisfiedRequirements, ", "))
	}
	return true, "", ""
}
