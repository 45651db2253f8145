package nodestatus

import (
	"fmt"
	"net"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// What an external cloud provider (--cloud-provider=external) and its cloud
// controller manager agree on with the kubelet, as k8s.io/cloud-provider/api
// spells them.
const (
	// CloudProviderExternal is the one --cloud-provider value besides "".
	CloudProviderExternal = "external"
	// TaintExternalCloudProvider keeps pods off a node registered with an
	// external cloud provider until the cloud controller manager has
	// initialised it (and removed the taint).
	TaintExternalCloudProvider = "node.cloudprovider.kubernetes.io/uninitialized"
	// AnnotationProvidedNodeIP hands --node-ip to the cloud controller
	// manager, which picks the node's addresses.
	AnnotationProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
)

// CheckCloudProvider accepts the --cloud-provider values upstream v1.36
// still knows: "" (none) and "external". Every in-tree provider is gone;
// the error is upstream's (cloudprovider.ErrorForDisabledProvider).
func CheckCloudProvider(name string) error {
	if name == "" || name == CloudProviderExternal {
		return nil
	}
	return fmt.Errorf("cloud provider %q was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider", name)
}

// externalCloudTaint is the taint an external cloud provider's node
// registers with.
func externalCloudTaint() v1.Taint {
	return v1.Taint{Key: TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}
}

// flagNodeIPs splits --node-ip (as given in Inputs.NodeIPFlag) into its
// primary and secondary address; nil when absent or not an IP.
func flagNodeIPs(flag []string) (primary, secondary net.IP) {
	if len(flag) > 0 {
		primary = net.ParseIP(strings.TrimSpace(flag[0]))
	}
	if len(flag) > 1 {
		secondary = net.ParseIP(strings.TrimSpace(flag[1]))
	}
	return primary, secondary
}

func specified(ip net.IP) bool { return ip != nil && !ip.IsUnspecified() }

// setProvidedNodeIP keeps the provided-node-ip annotation as upstream's
// NodeAddress setter does: with an external cloud provider and a --node-ip
// that names an address, "<ip>" or "<ip>,<secondary ip>"; in every other
// case the annotation is removed (a node that stopped using the cloud
// provider or the flag).
func setProvidedNodeIP(node *v1.Node, in Inputs) {
	primary, secondary := flagNodeIPs(in.NodeIPFlag)
	if in.ExternalCloudProvider && specified(primary) {
		value := primary.String()
		if specified(secondary) {
			value += "," + secondary.String()
		}
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[AnnotationProvidedNodeIP] = value
		return
	}
	delete(node.Annotations, AnnotationProvidedNodeIP)
}

// cloudOwnsAddresses reports whether, with an external cloud provider, the
// kubelet must leave node.Status.Addresses as they are (the cloud
// controller manager, or the kubelet's first report, set them), and fills
// in the Hostname-only bootstrap address when there is no --node-ip to
// offer. Upstream: NodeAddress with externalCloudProvider.
func cloudOwnsAddresses(node *v1.Node, in Inputs) bool {
	if !in.ExternalCloudProvider {
		return false
	}
	if len(node.Status.Addresses) > 0 {
		return true
	}
	if primary, _ := flagNodeIPs(in.NodeIPFlag); primary == nil {
		// Wait for the cloud controller manager to say which addresses
		// the node has; until then it is reachable by its name.
		node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: in.Hostname}}
		return true
	}
	return false
}
