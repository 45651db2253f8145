package podutil

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The classes of resource names, as upstream's core/v1 helper and the
// scheduler draw them. A pod's aggregated requests and limits are
// k8s.io/component-helpers/resource's.

// IsPrefixedNativeResource reports whether the name is in a kubernetes.io/
// domain ("kubernetes.io/x", "pod.alpha.kubernetes.io/x").
func IsPrefixedNativeResource(name v1.ResourceName) bool {
	return strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// IsNativeResource reports whether the name belongs to Kubernetes: no
// domain, or a kubernetes.io one.
func IsNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || IsPrefixedNativeResource(name)
}

// IsHugePageResourceName reports whether the name is hugepages-<size>.
func IsHugePageResourceName(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// IsAttachableVolumeResourceName reports whether the name is
// attachable-volumes-<driver>.
func IsAttachableVolumeResourceName(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceAttachableVolumesPrefix)
}

// IsExtendedResourceName reports whether the name is a vendor resource
// ("example.com/gpu"): not native, and a valid quota name once prefixed with
// "requests.".
func IsExtendedResourceName(name v1.ResourceName) bool {
	if IsNativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// IsOvercommitAllowed reports whether a request may be below its limit:
// native resources other than huge pages.
func IsOvercommitAllowed(name v1.ResourceName) bool {
	return IsNativeResource(name) && !IsHugePageResourceName(name)
}

// IsScalarResourceName reports whether the fit check counts the resource by
// name, beyond cpu, memory, ephemeral-storage and pods.
func IsScalarResourceName(name v1.ResourceName) bool {
	return IsExtendedResourceName(name) || IsHugePageResourceName(name) ||
		IsPrefixedNativeResource(name) || IsAttachableVolumeResourceName(name)
}
