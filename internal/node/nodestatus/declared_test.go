package nodestatus

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	ndffeatures "k8s.io/component-helpers/nodedeclaredfeatures/features"
	ndftypes "k8s.io/component-helpers/nodedeclaredfeatures/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// v136Gates are upstream v1.36's defaults for the gates discovery reads.
func v136Gates(override map[string]bool) ndf.FeatureGate {
	g := ndftypes.FeatureGateMap{
		"NodeDeclaredFeatures":                    true,
		"ExtendWebSocketsToKubelet":               true,
		"InPlacePodLevelResourcesVerticalScaling": true,
		"InPlacePodVerticalScalingInitContainers": true,
		"RestartAllContainersOnContainerExits":    true,
		"UserNamespacesHostNetworkSupport":        false,
	}
	for k, v := range override {
		g[k] = v
	}
	return g
}

// TestDeclare: upstream's discovery (what upstream v1.36 declares, the
// values its kubelet and library unit tests expect) split into what this
// kubelet declares and what it withholds.
func TestDeclare(t *testing.T) {
	v := version.MustParse("1.36.3")
	tests := []struct {
		name     string
		gates    ndf.FeatureGate
		runtime  ndf.RuntimeFeatures
		upstream []string // upstream v1.36 with the same gates and runtime
		declared []string // nil: the field is left alone
	}{
		{name: "v1.36 defaults", gates: v136Gates(nil),
			upstream: []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			declared: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "NodeDeclaredFeatures off: nothing published", gates: v136Gates(map[string]bool{"NodeDeclaredFeatures": false})},
		{name: "init container resize gate off", gates: v136Gates(map[string]bool{"InPlacePodVerticalScalingInitContainers": false}),
			upstream: []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "RestartAllContainersOnContainerExits"},
			declared: []string{"InPlacePodLevelResourcesVerticalScaling"}},
		{name: "pod-level resize gate off", gates: v136Gates(map[string]bool{"InPlacePodLevelResourcesVerticalScaling": false}),
			upstream: []string{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			declared: []string{"InPlacePodVerticalScalingInitContainers"}},
		{name: "every feature gate off: an empty list clears the field",
			gates:    ndftypes.FeatureGateMap{"NodeDeclaredFeatures": true},
			declared: []string{}},
		{name: "ExtendWebSocketsToKubelet off (upstream's TestExtendWebSocketsToKubeletFeatureDiscovery)",
			gates:    v136Gates(map[string]bool{"ExtendWebSocketsToKubelet": false}),
			upstream: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			declared: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "user namespaces with host network: gate on, runtime supports it",
			gates: v136Gates(map[string]bool{"UserNamespacesHostNetworkSupport": true}), runtime: ndf.RuntimeFeatures{UserNamespacesHostNetwork: true},
			upstream: []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"},
			declared: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "user namespaces with host network: gate on, runtime cannot",
			gates:    v136Gates(map[string]bool{"UserNamespacesHostNetworkSupport": true}),
			upstream: []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			declared: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "user namespaces with host network: runtime can, gate off (default)",
			gates: v136Gates(nil), runtime: ndf.RuntimeFeatures{UserNamespacesHostNetwork: true},
			upstream: []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"},
			declared: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Declare(DeclareInput{Gates: tc.gates, Runtime: tc.runtime, KubeletVersion: v})
			if !slices.Equal(d.Declared, tc.declared) || (d.Declared == nil) != (tc.declared == nil) {
				t.Errorf("declared %#v, want %#v", d.Declared, tc.declared)
			}
			var all []string
			all = append(all, d.Declared...)
			for _, w := range d.Withheld {
				if w.Reason == "" {
					t.Errorf("%s withheld without a reason", w.Name)
				}
				all = append(all, w.Name)
			}
			slices.Sort(all)
			if !slices.Equal(all, tc.upstream) {
				t.Errorf("declared+withheld %v, want upstream's %v", all, tc.upstream)
			}
		})
	}
}

// TestFeatureSupportCoversRegistry: every feature of the shared registry
// is classified (a library update adding one fails here until it is), and
// the table names no feature the registry lacks.
func TestFeatureSupportCoversRegistry(t *testing.T) {
	registry := map[string]bool{}
	for _, f := range ndffeatures.AllFeatures {
		registry[f.Name()] = true
		s, ok := featureSupport[f.Name()]
		if !ok {
			t.Errorf("feature %s is not classified in featureSupport", f.Name())
			continue
		}
		if !s.honoured && s.reason == "" {
			t.Errorf("feature %s is not honoured but has no reason", f.Name())
		}
	}
	for name := range featureSupport {
		if !registry[name] {
			t.Errorf("featureSupport names %s, which the registry does not have", name)
		}
	}
}

// unknownFeature is a registry feature this kubelet has not classified.
type unknownFeature struct{}

func (unknownFeature) Name() string                           { return "SomethingNew" }
func (unknownFeature) Discover(*ndf.NodeConfiguration) bool   { return true }
func (unknownFeature) Requirements() *ndf.FeatureRequirements { return &ndf.FeatureRequirements{} }
func (unknownFeature) InferForScheduling(*ndf.PodInfo) bool   { return false }
func (unknownFeature) InferForUpdate(_, _ *ndf.PodInfo) bool  { return false }
func (unknownFeature) MaxVersion() *version.Version           { return nil }

func TestDeclareWithholdsUnclassified(t *testing.T) {
	fw := ndf.New([]ndf.Feature{unknownFeature{}})
	d := declare(fw, DeclareInput{Gates: v136Gates(nil)})
	if len(d.Declared) != 0 || len(d.Withheld) != 1 || d.Withheld[0].Name != "SomethingNew" {
		t.Errorf("declaration %+v, want SomethingNew withheld", d)
	}
}

func TestDeclaredRuntimeFeatures(t *testing.T) {
	on := &runtimeapi.StatusResponse{Features: &runtimeapi.RuntimeFeatures{UserNamespacesHostNetwork: true}}
	if got := DeclaredRuntimeFeatures(on, nil); !got.UserNamespacesHostNetwork {
		t.Errorf("runtime with user namespaces and host network: %+v", got)
	}
	if got := DeclaredRuntimeFeatures(&runtimeapi.StatusResponse{}, nil); got.UserNamespacesHostNetwork {
		t.Errorf("runtime without features: %+v", got)
	}
	if got := DeclaredRuntimeFeatures(on, errors.New("down")); got.UserNamespacesHostNetwork {
		t.Errorf("failed call: %+v", got)
	}
}

// TestSetStatusDeclaredFeatures: nil leaves what the Node has, an empty
// list clears it, a list replaces it.
func TestSetStatusDeclaredFeatures(t *testing.T) {
	tests := []struct {
		name     string
		have, in []string
		want     []string
	}{
		{name: "gate off leaves the field", have: []string{"X"}, in: nil, want: []string{"X"}},
		{name: "empty clears", have: []string{"X"}, in: []string{}, want: nil},
		{name: "replaces", have: []string{"X"}, in: []string{"A", "B"}, want: []string{"A", "B"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := &v1.Node{Status: v1.NodeStatus{DeclaredFeatures: tc.have}}
			in := testInputs()
			in.DeclaredFeatures = tc.in
			SetStatus(node, in, time.Unix(100, 0))
			if !slices.Equal(node.Status.DeclaredFeatures, tc.want) {
				t.Errorf("declaredFeatures %v, want %v", node.Status.DeclaredFeatures, tc.want)
			}
		})
	}
}
