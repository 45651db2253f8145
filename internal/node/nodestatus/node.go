package nodestatus

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// AnnotationControllerManagedAttachDetach marks a node whose volumes the
// attach-detach controller attaches and detaches.
const AnnotationControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// defaultLabels are the labels the kubelet keeps in step on a Node that
// already exists, when the Node it would register carries them.
var defaultLabels = []string{
	v1.LabelHostname,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelInstanceTypeStable,
	v1.LabelInstanceType,
	v1.LabelOSStable,
	v1.LabelArchStable,
	v1.LabelWindowsBuild,
	kubeletapis.LabelOS,
	kubeletapis.LabelArch,
}

func osArch(in Inputs) (string, string) {
	osName, arch := in.Machine.OperatingSystem, in.Machine.Architecture
	if osName == "" {
		osName = runtime.GOOS
	}
	if arch == "" {
		arch = runtime.GOARCH
	}
	return osName, arch
}

// NewNode is the Node the kubelet registers, without status (SetStatus adds
// it): name, the well-known labels plus in.Labels, taints (with the
// external cloud provider's uninitialized taint, and the unschedulable taint
// when registering unschedulable), providerID, and the attach-detach
// annotation.
func NewNode(in Inputs) *v1.Node {
	osName, arch := osArch(in)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: in.NodeName,
			Labels: map[string]string{
				v1.LabelHostname:      in.Hostname,
				v1.LabelOSStable:      osName,
				v1.LabelArchStable:    arch,
				kubeletapis.LabelOS:   osName,
				kubeletapis.LabelArch: arch,
			},
		},
		Spec: v1.NodeSpec{
			Unschedulable: in.Unschedulable,
			ProviderID:    in.ProviderID,
		},
	}
	for k, v := range in.Labels {
		if old, ok := node.Labels[k]; ok && old != v {
			klog.InfoS("Node label overrides a default label", "label", k, "value", v, "default", old)
		}
		node.Labels[k] = v
	}

	taints := make([]v1.Taint, 0, len(in.Taints)+2)
	taints = append(taints, in.Taints...)
	if in.ExternalCloudProvider {
		taints = append(taints, externalCloudTaint())
	}
	if in.Unschedulable && !hasTaint(taints, v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule) {
		// Tainted from the start so no pod sneaks in before the node
		// lifecycle controller adds the taint for spec.unschedulable.
		taints = append(taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	if len(taints) > 0 {
		node.Spec.Taints = taints
	}

	if in.ControllerAttachDetach {
		node.Annotations = map[string]string{AnnotationControllerManagedAttachDetach: "true"}
	}
	return node
}

func hasTaint(taints []v1.Taint, key string, effect v1.TaintEffect) bool {
	for _, t := range taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// Reconcile brings a Node that was already registered (found when creating
// ours failed with AlreadyExists) in line with what the kubelet would
// register now, and reports whether it changed it: the attach-detach
// annotation, the default labels, huge page capacities (sizes gone are
// removed), and, when in.ResetExtendedResources, extended resources zeroed.
// Other labels, taints and the spec are left as they are.
func Reconcile(existing *v1.Node, in Inputs) (changed bool) {
	initial := NewNode(in)
	SetStatus(initial, in, time.Time{})

	changed = reconcileAttachDetachAnnotation(initial, existing)
	changed = reconcileDefaultLabels(initial, existing) || changed
	if in.ResetExtendedResources {
		changed = zeroExtendedResources(existing) || changed
	}
	changed = reconcileHugePages(initial, existing) || changed
	if existing.Spec.ProviderID != "" && in.ProviderID != "" && existing.Spec.ProviderID != in.ProviderID {
		klog.InfoS("Registered node has a different providerID; keeping it (providerID cannot change)",
			"node", klog.KObj(existing), "registered", existing.Spec.ProviderID, "configured", in.ProviderID)
	}
	return changed
}

func reconcileAttachDetachAnnotation(initial, existing *v1.Node) bool {
	want, wantSet := initial.Annotations[AnnotationControllerManagedAttachDetach]
	have, haveSet := existing.Annotations[AnnotationControllerManagedAttachDetach]
	if want == have && wantSet == haveSet {
		return false
	}
	if !wantSet {
		klog.InfoS("Controller attach/detach turned off; updating the existing node", "node", klog.KObj(existing))
		delete(existing.Annotations, AnnotationControllerManagedAttachDetach)
		return true
	}
	klog.InfoS("Controller attach/detach turned on; updating the existing node", "node", klog.KObj(existing))
	if existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	existing.Annotations[AnnotationControllerManagedAttachDetach] = want
	return true
}

// reconcileDefaultLabels copies the default labels the initial node carries;
// an empty value removes the label.
func reconcileDefaultLabels(initial, existing *v1.Node) bool {
	changed := false
	for _, key := range defaultLabels {
		want, ok := initial.Labels[key]
		if !ok {
			continue
		}
		have, haveSet := existing.Labels[key]
		switch {
		case want == "" && haveSet:
			delete(existing.Labels, key)
			changed = true
		case want != "" && have != want:
			if existing.Labels == nil {
				existing.Labels = map[string]string{}
			}
			existing.Labels[key] = want
			changed = true
		}
	}
	return changed
}

func zeroExtendedResources(node *v1.Node) bool {
	changed := false
	for name := range node.Status.Capacity {
		if !IsExtendedResourceName(name) {
			continue
		}
		klog.InfoS("Zeroing extended resource of the existing node", "node", klog.KObj(node), "resource", name)
		node.Status.Capacity[name] = *resource.NewQuantity(0, resource.DecimalSI)
		if node.Status.Allocatable == nil {
			node.Status.Allocatable = v1.ResourceList{}
		}
		node.Status.Allocatable[name] = *resource.NewQuantity(0, resource.DecimalSI)
		changed = true
	}
	return changed
}

// reconcileHugePages makes the huge page capacity and allocatable of the
// existing node those of the initial one, dropping sizes no longer present.
func reconcileHugePages(initial, existing *v1.Node) bool {
	changed := false
	if existing.Status.Capacity == nil {
		existing.Status.Capacity = initial.Status.Capacity.DeepCopy()
		changed = true
	}
	if existing.Status.Allocatable == nil {
		existing.Status.Allocatable = initial.Status.Allocatable.DeepCopy()
		changed = true
	}
	for name, want := range initial.Status.Capacity {
		if !IsHugePageResourceName(name) {
			continue
		}
		if have, ok := existing.Status.Capacity[name]; !ok || have.Cmp(want) != 0 {
			existing.Status.Capacity[name] = want.DeepCopy()
			changed = true
		}
		wantAlloc := initial.Status.Allocatable[name]
		if have, ok := existing.Status.Allocatable[name]; !ok || have.Cmp(wantAlloc) != 0 {
			existing.Status.Allocatable[name] = wantAlloc.DeepCopy()
			changed = true
		}
	}
	for name := range existing.Status.Capacity {
		if _, ok := initial.Status.Capacity[name]; ok || !IsHugePageResourceName(name) {
			continue
		}
		klog.InfoS("Removing a huge page size the machine no longer has", "node", klog.KObj(existing), "resource", name)
		delete(existing.Status.Capacity, name)
		delete(existing.Status.Allocatable, name)
		changed = true
	}
	return changed
}

// ensureOSArchLabels sets kubernetes.io/os and kubernetes.io/arch when they
// are missing or wrong, as every status update does; it reports a change.
func ensureOSArchLabels(node *v1.Node, in Inputs) bool {
	osName, arch := osArch(in)
	changed := false
	for key, want := range map[string]string{v1.LabelOSStable: osName, v1.LabelArchStable: arch} {
		if have, ok := node.Labels[key]; ok && have == want {
			continue
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[key] = want
		changed = true
	}
	return changed
}

// IsHugePageResourceName reports whether name is a huge page resource
// ("hugepages-2Mi").
func IsHugePageResourceName(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// IsExtendedResourceName reports whether name is an extended resource: a
// domain-qualified name outside kubernetes.io, valid as a quota name.
func IsExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(fmt.Sprintf("%s%s", v1.DefaultResourceRequestsPrefix, s))) == 0
}
