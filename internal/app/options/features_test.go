package options

import (
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// TestFeatureGates: upstream v1.36's defaults, overrides, and its checks
// (locked gates, dependencies) with its wording.
func TestFeatureGates(t *testing.T) {
	tests := []struct {
		name    string
		set     map[string]bool
		want    map[string]bool
		wantErr []string
	}{
		{name: "v1.36 defaults", want: map[string]bool{
			NodeDeclaredFeatures: true, "ExtendWebSocketsToKubelet": true, "InPlacePodLevelResourcesVerticalScaling": true,
			"InPlacePodVerticalScalingInitContainers": true, "RestartAllContainersOnContainerExits": true,
			"UserNamespacesHostNetworkSupport": false, "ContainerRestartRules": true, "PodLevelResources": true,
		}},
		{name: "a gate turned off", set: map[string]bool{"InPlacePodVerticalScalingInitContainers": false},
			want: map[string]bool{"InPlacePodVerticalScalingInitContainers": false, "InPlacePodLevelResourcesVerticalScaling": true}},
		{name: "an alpha gate turned on", set: map[string]bool{"UserNamespacesHostNetworkSupport": true},
			want: map[string]bool{"UserNamespacesHostNetworkSupport": true}},
		{name: "unknown gates are left to their readers", set: map[string]bool{"SomeOtherGate": true, "KubeletCrashLoopBackOffMax": false},
			want: map[string]bool{NodeDeclaredFeatures: true}},
		{name: "everything declared off with NodeDeclaredFeatures", set: map[string]bool{
			NodeDeclaredFeatures: false, "ExtendWebSocketsToKubelet": false, "InPlacePodLevelResourcesVerticalScaling": false,
			"InPlacePodVerticalScalingInitContainers": false, "RestartAllContainersOnContainerExits": false},
			want: map[string]bool{NodeDeclaredFeatures: false}},
		{name: "NodeDeclaredFeatures off alone breaks its dependents", set: map[string]bool{NodeDeclaredFeatures: false},
			wantErr: []string{"ExtendWebSocketsToKubelet is enabled, but depends on features that are disabled: [NodeDeclaredFeatures]",
				"InPlacePodVerticalScalingInitContainers is enabled, but depends on features that are disabled: [NodeDeclaredFeatures]"}},
		{name: "PodLevelResources off breaks pod-level resize", set: map[string]bool{"PodLevelResources": false},
			wantErr: []string{"InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: [PodLevelResources]"}},
		{name: "a GA gate is locked", set: map[string]bool{"InPlacePodVerticalScaling": false},
			wantErr: []string{"cannot set feature gate InPlacePodVerticalScaling to false, feature is locked to true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fg, err := FeatureGates(&kubeletconfigv1beta1.KubeletConfiguration{FeatureGates: tc.set})
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if got := fg.Enabled(featuregate.Feature(name)); got != want {
					t.Errorf("%s = %t, want %t", name, got, want)
				}
			}
		})
	}
}

func TestValidateRejectsBrokenFeatureGates(t *testing.T) {
	o := validOptions()
	o.Config.FeatureGates = map[string]bool{"PodLevelResources": false}
	err := Validate(o)
	if err == nil || !strings.Contains(err.Error(), "featureGates: Invalid value") ||
		!strings.Contains(err.Error(), "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: [PodLevelResources]") {
		t.Errorf("Validate = %v", err)
	}
}
