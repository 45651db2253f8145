package nodestatus

import (
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// nodeDeclaredFeaturesGate turns node.status.declaredFeatures on (KEP-5328,
// beta and on in v1.36).
const nodeDeclaredFeaturesGate = "NodeDeclaredFeatures"

// featureSupport says, for each feature of the shared registry
// (k8s.io/component-helpers/nodedeclaredfeatures/features.AllFeatures),
// whether this kubelet does what declaring it promises: the API server and
// the scheduler trust the declaration (an init-container resize, a
// websocket proxied to the kubelet, a pod placed here). A feature missing
// from this table is not declared (see Declare); the table test fails until
// it is classified.
var featureSupport = map[string]support{
	"InPlacePodLevelResourcesVerticalScaling": {honoured: true},
	"InPlacePodVerticalScalingInitContainers": {honoured: true},
	"ExtendWebSocketsToKubelet": {reason: "exec, attach and portForward WebSockets are proxied byte for byte to the runtime's " +
		"streaming server, with no v5.channel.k8s.io translation nor SPDY-over-WebSocket port-forward tunnel; " +
		"containerd 1.6 refuses v5.channel.k8s.io, so the API server must keep translating"},
	"RestartAllContainersOnContainerExits": {reason: "container restartPolicyRules are not implemented " +
		"(a pod with a RestartAllContainers rule fails admission, PodFeatureUnsupported)"},
	"UserNamespacesHostNetworkSupport": {reason: "a pod with hostUsers: false and hostNetwork: true is refused " +
		"(the runtime's user namespace is never combined with the host network)"},
}

type support struct {
	honoured bool
	reason   string // why not, when not honoured
}

// DeclareInput is what upstream's discovery reads (pkg/kubelet
// discoverNodeDeclaredFeatures): the effective feature gates, the runtime's
// features from its CRI Status at start-up, and the kubelet's version.
type DeclareInput struct {
	Gates          ndf.FeatureGate
	Runtime        ndf.RuntimeFeatures
	KubeletVersion *version.Version
}

// Withheld is a feature upstream would declare that this kubelet does not.
type Withheld struct {
	Name, Reason string
}

// Declaration is the node's declared features.
type Declaration struct {
	// Declared is node.status.declaredFeatures, sorted; nil when the
	// NodeDeclaredFeatures gate is off (the field is then left alone, as
	// upstream), non-nil (possibly empty) when it is on.
	Declared []string
	// Withheld are the features upstream v1.36 would declare with the same
	// gates and runtime that this kubelet does not honour.
	Withheld []Withheld
}

// Declare decides the declared features: upstream's discovery (the shared
// library's framework over its registry, so the gate and runtime rules
// have one home) less the features this kubelet does not honour. It is
// pure.
func Declare(in DeclareInput) Declaration {
	return declare(ndf.DefaultFramework, in)
}

func declare(fw *ndf.Framework, in DeclareInput) Declaration {
	if !in.Gates.Enabled(nodeDeclaredFeaturesGate) {
		return Declaration{}
	}
	d := Declaration{Declared: []string{}}
	for _, name := range fw.DiscoverNodeFeatures(&ndf.NodeConfiguration{
		FeatureGates: in.Gates, RuntimeFeatures: in.Runtime, Version: in.KubeletVersion,
	}) {
		s, known := featureSupport[name]
		switch {
		case s.honoured:
			d.Declared = append(d.Declared, name)
		case !known:
			d.Withheld = append(d.Withheld, Withheld{Name: name, Reason: "not known to this kubelet"})
		default:
			d.Withheld = append(d.Withheld, Withheld{Name: name, Reason: s.reason})
		}
	}
	return d
}
