package options

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Feature gates the kubelet reads through FeatureGates, named as upstream.
const (
	// NodeDeclaredFeatures (KEP-5328, beta and on in v1.36) publishes
	// node.status.declaredFeatures.
	NodeDeclaredFeatures = "NodeDeclaredFeatures"
)

// gateSpecs are upstream v1.36's specs (pkg/features) of the gates that
// decide node.status.declaredFeatures, and of the gates those depend on.
// Only these are known to FeatureGates; other gates pass through untouched
// (read elsewhere, or ignored).
var gateSpecs = map[featuregate.Feature]featuregate.VersionedSpecs{
	NodeDeclaredFeatures: {
		{Version: version.MustParse("1.35"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},
	},
	"ExtendWebSocketsToKubelet": {
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},
	},
	"InPlacePodVerticalScaling": {
		{Version: version.MustParse("1.27"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.33"), Default: true, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.35"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	"PodLevelResources": {
		{Version: version.MustParse("1.32"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.34"), Default: true, PreRelease: featuregate.Beta},
	},
	"InPlacePodLevelResourcesVerticalScaling": {
		{Version: version.MustParse("1.35"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},
	},
	"InPlacePodVerticalScalingInitContainers": {
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},
	},
	"ContainerRestartRules": {
		{Version: version.MustParse("1.34"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.35"), Default: true, PreRelease: featuregate.Beta},
	},
	"RestartAllContainersOnContainerExits": {
		{Version: version.MustParse("1.35"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},
	},
	"UserNamespacesSupport": {
		{Version: version.MustParse("1.25"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.33"), Default: true, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	"UserNamespacesHostNetworkSupport": {
		{Version: version.MustParse("1.35"), Default: false, PreRelease: featuregate.Alpha},
	},
}

// gateDependencies are upstream v1.36's dependencies between those gates
// (defaultKubernetesFeatureGateDependencies): a gate that is on while one
// it depends on is off fails the configuration, as upstream.
var gateDependencies = map[featuregate.Feature][]featuregate.Feature{
	"ExtendWebSocketsToKubelet":               {NodeDeclaredFeatures},
	"InPlacePodLevelResourcesVerticalScaling": {"InPlacePodVerticalScaling", "PodLevelResources", NodeDeclaredFeatures},
	"InPlacePodVerticalScalingInitContainers": {"InPlacePodVerticalScaling", NodeDeclaredFeatures},
	"RestartAllContainersOnContainerExits":    {"ContainerRestartRules", NodeDeclaredFeatures},
	"UserNamespacesHostNetworkSupport":        {"UserNamespacesSupport", NodeDeclaredFeatures},
}

// gateVersion is the version whose gate defaults apply (the kubelet's).
var gateVersion = version.MustParse("1.36")

// FeatureGates is c.featureGates over upstream v1.36's defaults for the
// gates in gateSpecs, checked as upstream checks them: a gate locked to its
// default cannot be changed and a gate cannot be on while one it depends on
// is off. Gates it does not know are left to their readers.
func FeatureGates(c *kubeletconfigv1beta1.KubeletConfiguration) (featuregate.FeatureGate, error) {
	fg := featuregate.NewVersionedFeatureGate(gateVersion)
	if err := fg.AddVersioned(gateSpecs); err != nil {
		return nil, fmt.Errorf("register feature gates: %w", err)
	}
	if err := fg.AddDependencies(gateDependencies); err != nil {
		return nil, fmt.Errorf("register feature gate dependencies: %w", err)
	}
	set := map[string]bool{}
	for name, on := range c.FeatureGates {
		if _, ok := gateSpecs[featuregate.Feature(name)]; ok {
			set[name] = on
		}
	}
	if err := fg.SetFromMap(set); err != nil {
		return nil, err
	}
	return fg, nil
}
