package podutil

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Upstream's TestPodSecrets and TestPodConfigmaps: a pod with every kind of
// reference, each naming the field it sits in.
func referencingPod() *v1.Pod {
	lor := func(name string) *v1.LocalObjectReference { return &v1.LocalObjectReference{Name: name} }
	container := func(prefix string) v1.Container {
		return v1.Container{
			EnvFrom: []v1.EnvFromSource{
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: *lor(prefix + "-envfrom-secret")}},
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: *lor(prefix + "-envfrom-cm")}},
			},
			Env: []v1.EnvVar{
				{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: *lor(prefix + "-env-secret"), Key: "k"}}},
				{Name: "C", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: *lor(prefix + "-env-cm"), Key: "k"}}},
				{Name: "F", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "V", Value: "plain"},
			},
		}
	}
	eph := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(container("eph"))}
	vol := func(src v1.VolumeSource) v1.Volume { return v1.Volume{Name: "v", VolumeSource: src} }
	return &v1.Pod{Spec: v1.PodSpec{
		ImagePullSecrets:    []v1.LocalObjectReference{{Name: "pull"}, {Name: ""}},
		InitContainers:      []v1.Container{container("init")},
		Containers:          []v1.Container{container("main"), container("main")},
		EphemeralContainers: []v1.EphemeralContainer{eph},
		Volumes: []v1.Volume{
			vol(v1.VolumeSource{AzureFile: &v1.AzureFileVolumeSource{SecretName: "azure"}}),
			vol(v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{SecretRef: lor("ceph")}}),
			vol(v1.VolumeSource{Cinder: &v1.CinderVolumeSource{SecretRef: lor("cinder")}}),
			vol(v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{SecretRef: lor("flex")}}),
			vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{Secret: &v1.SecretProjection{LocalObjectReference: *lor("projected-secret")}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: *lor("projected-cm")}},
				{DownwardAPI: &v1.DownwardAPIProjection{}},
			}}}),
			vol(v1.VolumeSource{RBD: &v1.RBDVolumeSource{SecretRef: lor("rbd")}}),
			vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "secret-vol"}}),
			vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "secret-vol"}}),
			vol(v1.VolumeSource{ScaleIO: &v1.ScaleIOVolumeSource{SecretRef: lor("scaleio")}}),
			vol(v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{SecretRef: lor("iscsi")}}),
			vol(v1.VolumeSource{StorageOS: &v1.StorageOSVolumeSource{SecretRef: lor("storageos")}}),
			vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{NodePublishSecretRef: lor("csi")}}),
			vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: *lor("cm-vol")}}),
			vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{}}),
			vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}),
		},
	}}
}

func TestSecretNames(t *testing.T) {
	want := []string{
		"pull",
		"init-envfrom-secret", "init-env-secret",
		"main-envfrom-secret", "main-env-secret",
		"eph-envfrom-secret", "eph-env-secret",
		"azure", "ceph", "cinder", "flex", "projected-secret", "rbd", "secret-vol", "scaleio", "iscsi", "storageos", "csi",
	}
	if got := SecretNames(referencingPod()); !reflect.DeepEqual(got, want) {
		t.Errorf("SecretNames:\n got  %q\n want %q", got, want)
	}
}

func TestConfigMapNames(t *testing.T) {
	want := []string{
		"init-envfrom-cm", "init-env-cm",
		"main-envfrom-cm", "main-env-cm",
		"eph-envfrom-cm", "eph-env-cm",
		"projected-cm", "cm-vol",
	}
	if got := ConfigMapNames(referencingPod()); !reflect.DeepEqual(got, want) {
		t.Errorf("ConfigMapNames:\n got  %q\n want %q", got, want)
	}
}

func TestNamesOfAPodWithoutReferences(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	if got := SecretNames(pod); got != nil {
		t.Errorf("SecretNames = %q, want none", got)
	}
	if got := ConfigMapNames(pod); got != nil {
		t.Errorf("ConfigMapNames = %q, want none", got)
	}
}
