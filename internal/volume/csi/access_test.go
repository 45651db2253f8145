package csi

import (
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

func TestPaths(t *testing.T) {
	// Upstream's layout, so volumes survive a swap with the upstream kubelet.
	if got, want := GlobalMountPath("/var/lib/kubelet", "hostpath.csi.k8s.io", "vol-1"),
		"/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount"; got != want {
		t.Errorf("global mount %s, want %s", got, want)
	}
	if got, want := PodMountPath("/var/lib/kubelet/pods", "u1", "pvc-1"), "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pvc-1/mount"; got != want {
		t.Errorf("pod mount %s, want %s", got, want)
	}
	if got := AttachmentName("vol-1", "d", "n"); !strings.HasPrefix(got, "csi-") || len(got) != 68 {
		t.Errorf("attachment name %s", got)
	}
	if got, want := UniqueVolumeName("d", "vol-1"), "kubernetes.io/csi/d^vol-1"; got != want {
		t.Errorf("unique name %s", got)
	}
	if d, h, ok := splitUnique("kubernetes.io/csi/d^vol^1"); !ok || d != "d" || h != "vol^1" {
		t.Errorf("split %s %s %v", d, h, ok)
	}
}

func TestAccessMode(t *testing.T) {
	cases := []struct {
		am    v1.PersistentVolumeAccessMode
		multi bool
		want  csipb.VolumeCapability_AccessMode_Mode
	}{
		{v1.ReadWriteOnce, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{v1.ReadWriteOnce, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{v1.ReadWriteOncePod, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{v1.ReadWriteOncePod, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{v1.ReadOnlyMany, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{v1.ReadWriteMany, true, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
	for _, tc := range cases {
		if got := AccessMode(tc.am, tc.multi); got != tc.want {
			t.Errorf("%s multi=%v: %v, want %v", tc.am, tc.multi, got, tc.want)
		}
	}
}

func TestAttachRequiredAndLifecycle(t *testing.T) {
	if !AttachRequired(nil) || !AttachRequired(&storagev1.CSIDriver{}) || AttachRequired(&storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}) {
		t.Error("attachRequired: no CSIDriver or unset means required, false means not")
	}
	persistentOnly := &storagev1.CSIDriver{}
	both := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}}
	cases := []struct {
		d       *storagev1.CSIDriver
		mode    storagev1.VolumeLifecycleMode
		wantErr string
	}{
		{nil, storagev1.VolumeLifecyclePersistent, ""},
		{nil, storagev1.VolumeLifecycleEphemeral, `volume mode "Ephemeral" not supported by driver d (no CSIDriver object)`},
		{persistentOnly, storagev1.VolumeLifecyclePersistent, ""},
		{persistentOnly, storagev1.VolumeLifecycleEphemeral, `volume mode "Ephemeral" not supported by driver d (only supports ["Persistent"])`},
		{both, storagev1.VolumeLifecycleEphemeral, ""},
	}
	for i, tc := range cases {
		err := CheckLifecycleMode("d", tc.d, tc.mode)
		if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("case %d: err %v, want %q", i, err, tc.wantErr)
		}
	}
}

func TestKubeletAppliesFSGroup(t *testing.T) {
	gid := ptr.To(int64(2000))
	rwo := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}}
	rwx := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}}}
	cases := []struct {
		name        string
		fsGroup     *int64
		readOnly    bool
		policy      storagev1.FSGroupPolicy
		driverGroup bool
		fsType      string
		pv          *v1.PersistentVolume
		want        bool
	}{
		{"no fsGroup", nil, false, storagev1.FileFSGroupPolicy, false, "ext4", rwo, false},
		{"read-only", gid, true, storagev1.FileFSGroupPolicy, false, "ext4", rwo, false},
		{"policy None", gid, false, storagev1.NoneFSGroupPolicy, false, "ext4", rwo, false},
		{"driver applies it", gid, false, storagev1.FileFSGroupPolicy, true, "ext4", rwo, false},
		{"policy File", gid, false, storagev1.FileFSGroupPolicy, false, "", rwx, true},
		{"RWO with fsType", gid, false, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false, "ext4", rwo, true},
		{"RWO without fsType", gid, false, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false, "", rwo, false},
		{"RWX with fsType", gid, false, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false, "ext4", rwx, false},
		{"inline with fsType", gid, false, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false, "ext4", nil, true},
	}
	for _, tc := range cases {
		if got := KubeletAppliesFSGroup(tc.fsGroup, tc.readOnly, tc.policy, tc.driverGroup, tc.fsType, tc.pv); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if FSGroupPolicy(nil) != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy {
		t.Error("default fsGroupPolicy")
	}
}

func TestNodeInfoUpdates(t *testing.T) {
	spec := &storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "other", NodeID: "x"}}}
	if !InstallDriverInCSINode(spec, "d", "n1", 10, map[string]string{"zone": "a", "rack": "r"}) {
		t.Fatal("install reported no change")
	}
	want := storagev1.CSINodeDriver{Name: "d", NodeID: "n1", TopologyKeys: []string{"rack", "zone"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(int32(10))}}
	if len(spec.Drivers) != 2 || !reflect.DeepEqual(spec.Drivers[1], want) {
		t.Fatalf("drivers %+v", spec.Drivers)
	}
	if InstallDriverInCSINode(spec, "d", "n1", 10, map[string]string{"rack": "r", "zone": "a"}) {
		t.Error("the same registration changed the CSINode")
	}
	if !InstallDriverInCSINode(spec, "d", "n1", 0, map[string]string{"rack": "r", "zone": "a"}) || spec.Drivers[1].Allocatable != nil {
		t.Errorf("allocatable not dropped: %+v", spec.Drivers)
	}
	if !RemoveDriverFromCSINode(spec, "d") || len(spec.Drivers) != 1 || RemoveDriverFromCSINode(spec, "d") {
		t.Errorf("remove: %+v", spec.Drivers)
	}

	ann, changed, err := SetNodeID(`{"other":"x"}`, "d", "n1")
	if err != nil || !changed || ann != `{"d":"n1","other":"x"}` {
		t.Fatalf("set: %q %v %v", ann, changed, err)
	}
	if _, changed, _ := SetNodeID(ann, "d", "n1"); changed {
		t.Error("same node ID changed the annotation")
	}
	if ann, changed, _ = SetNodeID(ann, "other", ""); !changed || ann != `{"d":"n1"}` {
		t.Fatalf("remove: %q", ann)
	}
	if ann, _, _ = SetNodeID(ann, "d", ""); ann != "" {
		t.Fatalf("remove last: %q", ann)
	}
	if _, _, err := SetNodeID("{", "d", "n"); err == nil {
		t.Error("bad annotation accepted")
	}

	add, err := TopologyLabels(map[string]string{"zone": "a", "os": "linux"}, map[string]string{"zone": "a", "rack": "r"})
	if err != nil || !reflect.DeepEqual(add, map[string]string{"rack": "r"}) {
		t.Fatalf("labels %v %v", add, err)
	}
	if _, err := TopologyLabels(map[string]string{"zone": "b"}, map[string]string{"zone": "a"}); err == nil || !strings.Contains(err.Error(), "topology value collision") {
		t.Fatalf("collision: %v", err)
	}
}
