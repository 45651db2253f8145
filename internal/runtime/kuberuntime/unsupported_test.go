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
	withVolume.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
		{Name: "bundle", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}},
		}}}},
		{Name: "claim", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "inline", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d"}}},
		{Name: "scratch-claim", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
		{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "r"}}},
		{Name: "share", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}},
	}
	cases := []struct {
		name string
		pod  *v1.Pod
		want []string
	}{
		{name: "plain pod", pod: plain},
		{name: "probes and hooks are handled", pod: probed},
		{name: "volumes we do not handle (service account tokens we do)", pod: withVolume, want: []string{`volume "bundle" trust-bundle/certificate projections`, `volume "share" (nfs)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnsupportedFeatures(tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("UnsupportedFeatures = %v, want %v", got, tc.want)
			}
		})
	}
}
