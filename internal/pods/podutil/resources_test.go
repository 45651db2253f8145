package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Names and values from upstream's core/v1 helper tests (TestIsNativeResource,
// TestIsOvercommitAllowed, TestIsExtendedResourceName) and the scheduler's
// IsScalarResourceName.
func TestResourceNameClasses(t *testing.T) {
	cases := []struct {
		name                                        v1.ResourceName
		native, hugePages, extended, overcommit, sc bool
	}{
		{name: "pod.alpha.kubernetes.io/opaque-int-resource-foo", native: true, overcommit: true, sc: true},
		{name: "kubernetes.io/resource-foo", native: true, overcommit: true, sc: true},
		{name: "foo", native: true, overcommit: true},
		{name: "a/b", extended: true, sc: true},
		{name: "", native: true, overcommit: true},
		{name: "cpu", native: true, overcommit: true},
		{name: "hugepages-100m", native: true, hugePages: true, sc: true},
		{name: "hugepages-2Mi", native: true, hugePages: true, sc: true},
		{name: "example.com/gpu", extended: true, sc: true},
		{name: "requests.example.com/gpu", extended: false},
		{name: "example.com/Invalid Name"},
		{name: "attachable-volumes-csi-x", native: true, overcommit: true, sc: true},
		{name: "deviceclass.resource.kubernetes.io/gpu", native: true, overcommit: true, sc: true},
		{name: "kubernetes.io/batch-cpu", native: true, overcommit: true, sc: true},
		{name: "pods", native: true, overcommit: true},
		{name: "bad name/x"},
	}
	for _, tc := range cases {
		if got := IsNativeResource(tc.name); got != tc.native {
			t.Errorf("IsNativeResource(%q) = %v, want %v", tc.name, got, tc.native)
		}
		if got := IsHugePageResourceName(tc.name); got != tc.hugePages {
			t.Errorf("IsHugePageResourceName(%q) = %v, want %v", tc.name, got, tc.hugePages)
		}
		if got := IsExtendedResourceName(tc.name); got != tc.extended {
			t.Errorf("IsExtendedResourceName(%q) = %v, want %v", tc.name, got, tc.extended)
		}
		if got := IsOvercommitAllowed(tc.name); got != tc.overcommit {
			t.Errorf("IsOvercommitAllowed(%q) = %v, want %v", tc.name, got, tc.overcommit)
		}
		if got := IsScalarResourceName(tc.name); got != tc.sc {
			t.Errorf("IsScalarResourceName(%q) = %v, want %v", tc.name, got, tc.sc)
		}
	}
}
