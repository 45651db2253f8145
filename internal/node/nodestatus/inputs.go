package nodestatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// Inputs is everything the Node object and its status depend on. The
// controller asks for fresh Inputs on every update; the pure functions of
// this package read nothing else.
type Inputs struct {
	// NodeName is the Node object's name (required).
	NodeName string
	// Hostname is the value of the kubernetes.io/hostname label and of the
	// Hostname address (hostnameOverride or the lowercased host name).
	Hostname string
	// NodeIPs are reported as InternalIP addresses, in order (--node-ip, or
	// the address resolved at start-up).
	NodeIPs []string
	// NodeIPFlag is --node-ip as given (one address or a dual-stack pair,
	// possibly the unspecified "0.0.0.0" or "::"); empty when not given.
	NodeIPFlag []string
	// ExternalCloudProvider is --cloud-provider=external: the Node
	// registers with the uninitialized taint and the provided-node-ip
	// annotation, and its addresses belong to the cloud controller
	// manager once set.
	ExternalCloudProvider bool
	// Machine describes the machine (hostinfo, read once at start-up).
	Machine hostinfo.Machine

	// RuntimeVersion is "<runtime name>://<version>", e.g. "containerd://2.0.4".
	RuntimeVersion string
	// KubeletVersion is the kubelet's version, e.g. "v1.36.3".
	KubeletVersion string
	// RuntimeHandlers and Features are what the runtime's CRI Status
	// reports (see FromRuntimeStatus); nil leaves them out.
	RuntimeHandlers []v1.NodeRuntimeHandler
	Features        *v1.NodeFeatures
	// DeclaredFeatures is node.status.declaredFeatures, decided once at
	// start-up (Declare): nil leaves the field alone (the
	// NodeDeclaredFeatures gate is off); non-nil replaces it, an empty list
	// clearing what an earlier kubelet on this node declared.
	DeclaredFeatures []string

	// Images are the images on the node, in any order; SetStatus sorts
	// them by size and keeps MaxImages of them.
	Images []v1.ContainerImage
	// MaxImages is nodeStatusMaxImages: -1 means no limit (upstream
	// default 50).
	MaxImages int32

	// MaxPods and PodsPerCore give the pods capacity: MaxPods, or
	// PodsPerCore×CPUs when that is smaller and PodsPerCore > 0.
	MaxPods     int32
	PodsPerCore int32
	// SystemReserved and KubeReserved are subtracted from capacity to give
	// allocatable.
	SystemReserved, KubeReserved v1.ResourceList
	// EvictionHard holds the effective hard eviction thresholds
	// ("memory.available": "100Mi", "nodefs.available": "10%", ...), already
	// defaulted; memory.available and nodefs.available are subtracted from
	// allocatable memory and ephemeral storage.
	EvictionHard map[string]string

	// KubeletPort is the port of the kubelet's API (daemonEndpoints).
	KubeletPort int32

	// Health: a non-nil error makes the node NotReady, its message joined
	// into the Ready condition's. Use the upstream wording (see
	// FromRuntimeStatus): RuntimeErr "container runtime is down" or
	// "container runtime not ready: ..."; NetworkErr "container runtime
	// network not ready: ..."; PLEGErr is PLEG's own error, reported as
	// "PLEG is not healthy: <err>"; StorageErr for volume plugins not
	// initialised; ShutdownErr from the graceful node shutdown manager.
	RuntimeErr, PLEGErr, NetworkErr, StorageErr, ShutdownErr error

	// MemoryPressure, DiskPressure and PIDPressure come from the eviction
	// manager; false until one exists.
	MemoryPressure, DiskPressure, PIDPressure bool

	// Labels are --node-labels; they win over the default labels.
	Labels map[string]string
	// Taints are registerWithTaints.
	Taints []v1.Taint
	// ProviderID is spec.providerID when registering.
	ProviderID string
	// Unschedulable registers the node unschedulable (!registerSchedulable).
	Unschedulable bool
	// ControllerAttachDetach is enableControllerAttachDetach (upstream
	// default true): the node carries the annotation that hands volume
	// attach/detach to the attach-detach controller.
	ControllerAttachDetach bool
	// VolumesInUse are the attachable volumes pods on the node use
	// (node.status.volumesInUse, so the attach/detach controller does not
	// detach them); nil leaves the field as it is.
	VolumesInUse []v1.UniqueVolumeName
	// ResetExtendedResources zeroes extended resources of an already
	// registered Node (the device manager's "node was recreated" answer).
	ResetExtendedResources bool
}
