package volume

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/volume/mountpoint"
)

func TestClaimOf(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}
	name, ro, eph, ok := ClaimOf(pod, &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}})
	if name != "c" || !ro || eph || !ok {
		t.Errorf("claim: %s %v %v %v", name, ro, eph, ok)
	}
	name, ro, eph, ok = ClaimOf(pod, &v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	if name != "web-0-scratch" || ro || !eph || !ok {
		t.Errorf("ephemeral: %s %v %v %v", name, ro, eph, ok)
	}
	if _, _, _, ok := ClaimOf(pod, &v1.Volume{VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}); ok {
		t.Error("emptyDir has a claim")
	}
}

func TestCheckClaim(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"}}
	bound := func() *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "claim-uid"},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv1"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	}
	pending := bound()
	pending.Status.Phase = v1.ClaimPending
	deleting := bound()
	deleting.DeletionTimestamp = &metav1.Time{}
	noVolume := bound()
	noVolume.Spec.VolumeName = ""
	owned := bound()
	owned.OwnerReferences = []metav1.OwnerReference{{UID: "pod-uid", Controller: ptr.To(true)}}
	cases := []struct {
		name      string
		ephemeral bool
		pvc       *v1.PersistentVolumeClaim
		want      string
	}{
		{"bound", false, bound(), ""},
		{"pending", false, pending, "PVC is not bound"},
		{"being deleted", false, deleting, "PVC is being deleted"},
		{"no volume name", false, noVolume, "PVC has empty pvc.Spec.VolumeName"},
		{"ephemeral not owned", true, bound(), "PVC was not created for pod ns/p (pod is not owner)"},
		{"ephemeral owned", true, owned, ""},
	}
	for _, tc := range cases {
		err := CheckClaim(pod, tc.ephemeral, tc.pvc)
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}

	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}}
	if err := CheckBinding(bound(), pv); err == nil || !strings.Contains(err.Error(), "nil pv.Spec.ClaimRef") {
		t.Errorf("unbound PV: %v", err)
	}
	pv.Spec.ClaimRef = &v1.ObjectReference{UID: "other"}
	if err := CheckBinding(bound(), pv); err == nil || !strings.Contains(err.Error(), "does not point to claim.UID (claim-uid)") {
		t.Errorf("PV of another claim: %v", err)
	}
	pv.Spec.ClaimRef.UID = "claim-uid"
	if err := CheckBinding(bound(), pv); err != nil {
		t.Error(err)
	}
}

func TestCheckVolumeMode(t *testing.T) {
	block := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{VolumeMode: ptr.To(v1.PersistentVolumeBlock)}}
	fs := &v1.PersistentVolume{}
	mounts := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{VolumeMounts: []v1.VolumeMount{{Name: "v"}}}}}}
	devices := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{VolumeDevices: []v1.VolumeDevice{{Name: "v"}}}}}}
	if err := CheckVolumeMode(mounts, "v", fs); err != nil {
		t.Error(err)
	}
	if err := CheckVolumeMode(devices, "v", block); err != nil {
		t.Error(err)
	}
	if err := CheckVolumeMode(mounts, "v", block); err == nil || err.Error() != "volume v has volumeMode Block, but is specified in volumeMounts" {
		t.Errorf("block mounted: %v", err)
	}
	if err := CheckVolumeMode(devices, "v", fs); err == nil || err.Error() != "volume v has volumeMode Filesystem, but is specified in volumeDevices" {
		t.Errorf("filesystem as device: %v", err)
	}
}

func TestSourceName(t *testing.T) {
	if got := SourceName(&v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{}}); got != "nfs" {
		t.Errorf("nfs: %q", got)
	}
	if got := SourceName(&v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{}}); got != "awsElasticBlockStore" {
		t.Errorf("ebs: %q", got)
	}
	if got := SourceName(&v1.VolumeSource{}); got != "" {
		t.Errorf("none: %q", got)
	}
}

// claims serves fixed claims and volumes.
type claims struct {
	pvcs map[string]*v1.PersistentVolumeClaim
	pvs  map[string]*v1.PersistentVolume
}

func (c claims) PersistentVolumeClaim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if p, ok := c.pvcs[name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (c claims) PersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if p, ok := c.pvs[name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

func boundPair(claimName, pvName string, src v1.PersistentVolumeSource) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName, UID: types.UID("uid-" + claimName)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pvName}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: src, ClaimRef: &v1.ObjectReference{Name: claimName, UID: pvc.UID}}}
	return pvc, pv
}

// A pod's claims resolve to their PersistentVolumes: hostPath and local
// volumes are mounted, a claim that is not bound or a source this kubelet
// does not mount fails with upstream's FailedMount message.
func TestClaimVolumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("bind-mounting a local volume needs root (the test suite runs as root)")
	}
	host := t.TempDir()
	local := t.TempDir()
	c := claims{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
	add := func(claimName, pvName string, src v1.PersistentVolumeSource) {
		pvc, pv := boundPair(claimName, pvName, src)
		c.pvcs[claimName], c.pvs[pvName] = pvc, pv
	}
	add("hp", "pv-hp", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}})
	add("lo", "pv-lo", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}})
	add("nfs", "pv-nfs", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}})
	c.pvcs["pending"] = &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}

	podsDir := t.TempDir()
	m := New(Config{PodsDir: podsDir, Claims: c})
	vol := func(name, claim string, ro bool) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: ro}}}
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-1"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{vol("a", "hp", false), vol("b", "lo", true), vol("c", "nfs", false), vol("d", "pending", false), vol("e", "missing", false)},
		Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{
			{Name: "a", MountPath: "/a"}, {Name: "b", MountPath: "/b"}, {Name: "c", MountPath: "/c"}, {Name: "d", MountPath: "/d"}, {Name: "e", MountPath: "/e"}}}},
	}}
	res := m.SetUpPod(context.Background(), pod)
	msgs := map[string]string{}
	for _, f := range res.Failed {
		msgs[f.Volume] = f.Message()
	}
	want := map[string]string{
		"c": `MountVolume.SetUp failed for volume "pv-nfs" : PersistentVolume "pv-nfs" has volume source "nfs", which this kubelet does not mount (it mounts csi, local and hostPath)`,
		"d": `Unable to attach or mount volumes: unmounted volumes=[d], unattached volumes=[d], failed to process volumes=[d]: error processing PVC ns/pending: PVC is not bound`,
		"e": `Unable to attach or mount volumes: unmounted volumes=[e], unattached volumes=[e], failed to process volumes=[e]: error processing PVC ns/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found`,
	}
	for k, w := range want {
		if msgs[k] != w {
			t.Errorf("volume %s:\n got %s\nwant %s", k, msgs[k], w)
		}
	}
	if len(res.Failed) != 3 {
		t.Errorf("failures %v", msgs)
	}

	// The bound ones are ready: hostPath as is, local bind-mounted
	// read-only into the pod's directory.
	pod.Spec.Volumes = pod.Spec.Volumes[:2]
	pod.Spec.Containers[0].VolumeMounts = pod.Spec.Containers[0].VolumeMounts[:2]
	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	localDir := filepath.Join(podsDir, "pod-1", "volumes", "kubernetes.io~local-volume", "pv-lo")
	if mounts[0].HostPath != host || mounts[0].Readonly || mounts[1].HostPath != localDir || !mounts[1].Readonly {
		t.Fatalf("mounts %+v %+v", mounts[0], mounts[1])
	}
	if ok, _ := mountpoint.IsMountPoint(localDir); !ok {
		t.Fatal("local volume not bind-mounted")
	}
	if err := os.WriteFile(filepath.Join(localDir, "x"), nil, 0o644); err == nil {
		t.Error("a read-only claim's local volume is writable")
	}
	if err := m.TearDown("pod-1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountpoint.IsMountPoint(localDir); ok {
		t.Fatal("local volume still mounted after teardown")
	}
	if _, err := os.Stat(localDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("local volume dir left: %v", err)
	}
}

// A local PersistentVolume on a block device: formatted (ext4) and mounted
// once, bind-mounted into the pod; in volumeMode Block mapped as a device.
func TestLocalVolumeOnBlockDevice(t *testing.T) {
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup (the suite runs as root with loop devices): %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })

	c := claims{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
	pvcFS, pvFS := boundPair("fs", "pv-fs", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dev}})
	pvcRaw, pvRaw := boundPair("raw", "pv-raw", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dev}})
	pvRaw.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	c.pvcs["fs"], c.pvs["pv-fs"], c.pvcs["raw"], c.pvs["pv-raw"] = pvcFS, pvFS, pvcRaw, pvRaw
	root := t.TempDir()
	podsDir := filepath.Join(root, "pods")
	m := New(Config{PodsDir: podsDir, Claims: c})
	claimVol := func(name string) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-1"}, Spec: v1.PodSpec{
		Volumes:    []v1.Volume{claimVol("fs")},
		Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "fs", MountPath: "/data"}}}},
	}}
	if res := m.SetUpPod(context.Background(), pod); len(res.Failed) != 0 {
		t.Fatal(res.Failed[0].Message())
	}
	global := filepath.Join(root, "plugins", "kubernetes.io", "local-volume", "mounts", "pv-fs")
	podDir := filepath.Join(podsDir, "pod-1", "volumes", "kubernetes.io~local-volume", "pv-fs")
	for _, p := range []string{global, podDir} {
		if ok, _ := mountpoint.IsMountPoint(p); !ok {
			t.Fatalf("%s not mounted", p)
		}
	}
	if fsType, _ := deviceFSType(dev); fsType != "ext4" {
		t.Fatalf("device formatted as %q", fsType)
	}
	if err := os.WriteFile(filepath.Join(podDir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown("pod-1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{global, podDir} {
		if ok, _ := mountpoint.IsMountPoint(p); ok {
			t.Fatalf("%s still mounted after teardown", p)
		}
	}

	raw := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "pod-2"}, Spec: v1.PodSpec{
		Volumes:    []v1.Volume{claimVol("raw")},
		Containers: []v1.Container{{Name: "c", VolumeDevices: []v1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}}},
	}}
	if res := m.SetUpPod(context.Background(), raw); len(res.Failed) != 0 {
		t.Fatal(res.Failed[0].Message())
	}
	devs, err := m.Devices(raw, &raw.Spec.Containers[0])
	if err != nil || len(devs) != 1 {
		t.Fatalf("devices %v (%v)", devs, err)
	}
	if target, err := os.Readlink(devs[0].HostPath); err != nil || target != dev || devs[0].Permissions != "mrw" {
		t.Fatalf("device %+v -> %s (%v)", devs[0], target, err)
	}
}
