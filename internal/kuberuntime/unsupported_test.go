package kuberuntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestUnsupportedFeatures(t *testing.T) {
	plain := testPod(v1.RestartPolicyAlways, "a")
	probed := testPod(v1.RestartPolicyAlways, "a")
	probed.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
	probed.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{}}
	withVolume := testPod(v1.RestartPolicyAlways, "a")
	withVolume.Spec.Volumes = []v1.Volume{{Name: "kube-api-access"}}
	cases := []struct {
		name string
		pod  *v1.Pod
		want []string
	}{
		{name: "plain pod", pod: plain},
		{name: "probe and hook", pod: probed, want: []string{`container "a" readinessProbe`, `container "a" lifecycle hooks`}},
		{name: "volume", pod: withVolume, want: []string{`volume "kube-api-access"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnsupportedFeatures(tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("UnsupportedFeatures = %v, want %v", got, tc.want)
			}
		})
	}
}
