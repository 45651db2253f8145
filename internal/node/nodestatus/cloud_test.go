package nodestatus

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestSetAddressesCloudProvider follows upstream's TestNodeAddress
// (pkg/kubelet/nodestatus/setters_test.go) case by case: NodeIPFlag is the
// nodeIP/secondaryNodeIP there, NodeIPs what the kubelet resolved at
// start-up (the flag's addresses, or resolvedIP when the flag is absent or
// unspecified).
func TestSetAddressesCloudProvider(t *testing.T) {
	const host = "hostname"
	internal := func(ips ...string) []v1.NodeAddress {
		var out []v1.NodeAddress
		for _, ip := range ips {
			out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
		return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: host})
	}
	existing := []v1.NodeAddress{{Address: "10.1.1.2"}}
	const key = AnnotationProvidedNodeIP
	tests := []struct {
		name                string
		flag, resolved      []string
		cloud               bool
		addresses           []v1.NodeAddress // on the node before
		annotations         map[string]string
		wantAddresses       []v1.NodeAddress
		wantAnnotations     map[string]string
		checkAnnotationsToo bool
	}{
		{name: "using cloud provider and nodeIP specified", flag: []string{"10.0.0.1"}, resolved: []string{"10.0.0.1"}, cloud: true,
			wantAddresses: internal("10.0.0.1")},
		{name: "no cloud provider and nodeIP IPv4 unspecified", flag: []string{"0.0.0.0"}, resolved: []string{"10.0.0.2"},
			wantAddresses: internal("10.0.0.2")},
		{name: "no cloud provider and nodeIP IPv6 unspecified", flag: []string{"::"}, resolved: []string{"2001:db2::2"},
			wantAddresses: internal("2001:db2::2")},
		{name: "using cloud provider and nodeIP IPv4 unspecified", flag: []string{"0.0.0.0"}, resolved: []string{"10.0.0.2"}, cloud: true,
			wantAddresses: internal("10.0.0.2")},
		{name: "using cloud provider and nodeIP IPv6 unspecified", flag: []string{"::"}, resolved: []string{"2001:db2::2"}, cloud: true,
			wantAddresses: internal("2001:db2::2")},
		{name: "no cloud provider and no nodeIP resolve IPv4", resolved: []string{"10.0.0.2"},
			wantAddresses: internal("10.0.0.2")},
		{name: "no cloud provider and no nodeIP resolve IPv6", resolved: []string{"2001:db2::2"},
			wantAddresses: internal("2001:db2::2")},
		{name: "using cloud provider and no nodeIP resolve IPv4", resolved: []string{"10.0.0.2"}, cloud: true,
			wantAddresses: internal()},
		{name: "using cloud provider and no nodeIP resolve IPv6", resolved: []string{"2001:db2::2"}, cloud: true,
			wantAddresses: internal()},
		{name: "cloud provider gets nodeIP annotation", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"}, cloud: true,
			wantAddresses: internal("10.1.1.1"), wantAnnotations: map[string]string{key: "10.1.1.1"}, checkAnnotationsToo: true},
		{name: "using cloud provider and node address is already set", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"}, cloud: true,
			addresses: existing, wantAddresses: existing, wantAnnotations: map[string]string{key: "10.1.1.1"}, checkAnnotationsToo: true},
		{name: "cloud controller's addresses kept without nodeIP", resolved: []string{"10.0.0.2"}, cloud: true,
			addresses:       []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.7"}, {Type: v1.NodeInternalDNS, Address: "ip-10-0-0-2.internal"}},
			wantAddresses:   []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.7"}, {Type: v1.NodeInternalDNS, Address: "ip-10-0-0-2.internal"}},
			wantAnnotations: map[string]string{}, checkAnnotationsToo: true},
		{name: "No cloud provider does not get nodeIP annotation", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"},
			wantAddresses: internal("10.1.1.1"), wantAnnotations: map[string]string{}, checkAnnotationsToo: true},
		{name: "No cloud provider overwrites addresses set by others", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"},
			addresses: existing, wantAddresses: internal("10.1.1.1")},
		{name: "Stale nodeIP annotation is removed when not using cloud provider", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"},
			annotations:   map[string]string{key: "10.1.1.3"},
			wantAddresses: internal("10.1.1.1"), wantAnnotations: map[string]string{}, checkAnnotationsToo: true},
		{name: "Stale nodeIP annotation is removed when the cloud provider has no nodeIP", resolved: []string{"10.0.0.2"}, cloud: true,
			annotations:   map[string]string{key: "10.1.1.3"},
			wantAddresses: internal(), wantAnnotations: map[string]string{}, checkAnnotationsToo: true},
		{name: "Incorrect nodeIP annotation is fixed", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"}, cloud: true,
			annotations:   map[string]string{key: "10.1.1.3"},
			wantAddresses: internal("10.1.1.1"), wantAnnotations: map[string]string{key: "10.1.1.1"}, checkAnnotationsToo: true},
		{name: "Dual-stack cloud, with dual-stack nodeIPs", flag: []string{"2600:1f14:1d4:d101::ba3d", "10.1.1.2"},
			resolved: []string{"2600:1f14:1d4:d101::ba3d", "10.1.1.2"}, cloud: true,
			wantAddresses:   internal("2600:1f14:1d4:d101::ba3d", "10.1.1.2"),
			wantAnnotations: map[string]string{key: "2600:1f14:1d4:d101::ba3d,10.1.1.2"}, checkAnnotationsToo: true},
		{name: "Upgrade to cloud dual-stack nodeIPs", flag: []string{"10.1.1.1", "2600:1f14:1d4:d101::ba3d"},
			resolved: []string{"10.1.1.1", "2600:1f14:1d4:d101::ba3d"}, cloud: true,
			annotations:     map[string]string{key: "10.1.1.1"},
			wantAddresses:   internal("10.1.1.1", "2600:1f14:1d4:d101::ba3d"),
			wantAnnotations: map[string]string{key: "10.1.1.1,2600:1f14:1d4:d101::ba3d"}, checkAnnotationsToo: true},
		{name: "Downgrade from cloud dual-stack nodeIPs", flag: []string{"10.1.1.1"}, resolved: []string{"10.1.1.1"}, cloud: true,
			annotations:     map[string]string{key: "10.1.1.1,2600:1f14:1d4:d101::ba3d"},
			wantAddresses:   internal("10.1.1.1"),
			wantAnnotations: map[string]string{key: "10.1.1.1"}, checkAnnotationsToo: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			in.Hostname, in.NodeIPFlag, in.NodeIPs, in.ExternalCloudProvider = host, tc.flag, tc.resolved, tc.cloud
			node := &v1.Node{}
			node.Annotations = maps.Clone(tc.annotations)
			node.Status.Addresses = append([]v1.NodeAddress(nil), tc.addresses...)
			SetStatus(node, in, time.Unix(100, 0))
			if fmt.Sprint(node.Status.Addresses) != fmt.Sprint(tc.wantAddresses) {
				t.Errorf("addresses = %v, want %v", node.Status.Addresses, tc.wantAddresses)
			}
			if tc.checkAnnotationsToo && !maps.Equal(node.Annotations, tc.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", node.Annotations, tc.wantAnnotations)
			}
		})
	}
}

func TestCheckCloudProvider(t *testing.T) {
	for _, ok := range []string{"", "external"} {
		if err := CheckCloudProvider(ok); err != nil {
			t.Errorf("CheckCloudProvider(%q) = %v", ok, err)
		}
	}
	// Upstream's cloudprovider.ErrorForDisabledProvider, word for word.
	want := `cloud provider "aws" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider`
	if err := CheckCloudProvider("aws"); err == nil || err.Error() != want {
		t.Errorf("CheckCloudProvider(aws) = %v, want %q", err, want)
	}
	if err := CheckCloudProvider("External"); err == nil {
		t.Error("CheckCloudProvider(External) accepted: upstream compares case-sensitively")
	}
}

// The Node an external cloud provider's kubelet registers carries the
// uninitialized taint after registerWithTaints, and the annotation; a Node
// already registered is not tainted again (the cloud controller manager
// removed the taint) and keeps its addresses and providerID.
func TestExternalCloudProviderNode(t *testing.T) {
	in := testInputs()
	in.ExternalCloudProvider = true
	in.NodeIPFlag = []string{"10.0.0.5"}
	in.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	node := LocalNode(in, time.Unix(100, 0))
	wantTaints := []v1.Taint{in.Taints[0], {Key: TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}}
	if fmt.Sprint(node.Spec.Taints) != fmt.Sprint(wantTaints) {
		t.Errorf("taints = %v, want %v", node.Spec.Taints, wantTaints)
	}
	if got := node.Annotations[AnnotationProvidedNodeIP]; got != "10.0.0.5" {
		t.Errorf("provided-node-ip = %q, want 10.0.0.5", got)
	}

	// The cloud controller manager initialised it.
	existing := node.DeepCopy()
	existing.Spec.Taints = existing.Spec.Taints[:1]
	existing.Spec.ProviderID = "gce://proj/zone/inst"
	ccm := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.99"}, {Type: v1.NodeExternalIP, Address: "203.0.113.7"}}
	existing.Status.Addresses = ccm
	original := existing.DeepCopy()
	Reconcile(existing, in)
	SetStatus(existing, in, time.Unix(200, 0))
	if fmt.Sprint(existing.Spec) != fmt.Sprint(original.Spec) {
		t.Errorf("spec = %+v, want it untouched: %+v", existing.Spec, original.Spec)
	}
	if fmt.Sprint(existing.Status.Addresses) != fmt.Sprint(ccm) {
		t.Errorf("addresses = %v, want the cloud controller's %v", existing.Status.Addresses, ccm)
	}
	patch, err := StatusPatch(original, existing)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"addresses", "taints", "providerID"} {
		if strings.Contains(string(patch), s) {
			t.Errorf("status patch %s touches %s", patch, s)
		}
	}
}
