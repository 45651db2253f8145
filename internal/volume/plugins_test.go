package volume

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/volume/csi"
)

type images struct {
	ref string
	err error
}

func (i images) EnsureImageVolume(_ context.Context, _ *v1.Pod, ref string, policy v1.PullPolicy) (string, error) {
	if i.err != nil {
		return "", i.err
	}
	return i.ref + "@" + string(policy), nil
}

// An image volume is pulled at set-up (a failure is a FailedMount) and
// handed to the runtime as an image mount, read-only, with its subPath; a
// subPath leaving the image is refused.
func TestImageVolumeMounts(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry/tools:1", PullPolicy: v1.PullIfNotPresent}}}},
		Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{
			{Name: "tools", MountPath: "/tools"}, {Name: "tools", MountPath: "/bin2", SubPath: "bin"}}}},
	}}
	bad := New(Config{PodsDir: t.TempDir(), Images: images{err: errors.New("ErrImagePull: not found")}})
	res := bad.SetUpPod(context.Background(), pod)
	if len(res.Failed) != 1 || res.Failed[0].Message() != `MountVolume.SetUp failed for volume "tools" : ErrImagePull: not found` {
		t.Fatalf("failures %+v", res.Failed)
	}

	m := New(Config{PodsDir: t.TempDir(), Images: images{ref: "sha256:abc"}})
	if res := m.SetUpPod(context.Background(), pod); len(res.Failed) != 0 {
		t.Fatalf("failures %+v", res.Failed)
	}
	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 2 || mounts[0].Image.GetImage() != "sha256:abc@IfNotPresent" || mounts[0].Image.GetUserSpecifiedImage() != "registry/tools:1" ||
		!mounts[0].Readonly || mounts[0].HostPath != "" || mounts[1].ImageSubPath != "bin" || mounts[1].ContainerPath != "/bin2" {
		t.Fatalf("mounts %+v %+v", mounts[0], mounts[1])
	}
	pod.Spec.Containers[0].VolumeMounts[1].SubPath = "../../etc"
	if _, err := m.Mounts(pod, &pod.Spec.Containers[0]); err == nil || !strings.Contains(err.Error(), "'..'") {
		t.Fatalf("a subPath leaving the image was accepted: %v", err)
	}
}

func TestDevicesNeedMappedBlockVolumes(t *testing.T) {
	m := New(Config{PodsDir: t.TempDir()})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	c := &v1.Container{Name: "c", VolumeDevices: []v1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}}
	if _, err := m.Devices(pod, c); err == nil {
		t.Fatal("a device for a volume that is not mapped")
	}
	m.setPluginState("u1", "raw", pluginVolume{device: "/pods/u1/volumeDevices/kubernetes.io~csi/pv1", readOnly: true})
	devs, err := m.Devices(pod, c)
	if err != nil || len(devs) != 1 || devs[0].ContainerPath != "/dev/xvda" || devs[0].HostPath != "/pods/u1/volumeDevices/kubernetes.io~csi/pv1" || devs[0].Permissions != "r" {
		t.Fatalf("devices %+v (%v)", devs, err)
	}
}

// fakeCSI records SetUp calls; its driver asks for republishing.
type fakeCSI struct {
	setUps    []string
	republish bool
}

func (f *fakeCSI) SetUp(_ context.Context, r csi.Request) (csi.Result, error) {
	f.setUps = append(f.setUps, r.SpecName)
	return csi.Result{Path: "/pods/" + string(r.Pod.UID) + "/volumes/kubernetes.io~csi/" + r.SpecName + "/mount"}, nil
}
func (f *fakeCSI) SetUpBlock(context.Context, csi.Request) (string, error) { return "", nil }
func (f *fakeCSI) TearDownPod(context.Context, string) error               { return nil }
func (f *fakeCSI) RequiresRepublish(string) bool                           { return f.republish }
func (f *fakeCSI) HasVolumes(string) bool                                  { return false }
func (f *fakeCSI) CleanupOrphans(context.Context, map[string]bool) error   { return nil }

// A CSI inline volume is published once; Refresh (each sync of a running
// pod) publishes it again when its driver's CSIDriver says requiresRepublish.
func TestRequiresRepublish(t *testing.T) {
	for _, republish := range []bool{false, true} {
		f := &fakeCSI{republish: republish}
		m := New(Config{PodsDir: t.TempDir(), CSI: f})
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
			Volumes:    []v1.Volume{{Name: "secrets", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "vault.csi"}}}},
			Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "secrets", MountPath: "/s"}}}},
		}}
		if res := m.SetUpPod(context.Background(), pod); len(res.Failed) != 0 {
			t.Fatal(res.Failed)
		}
		m.SetUpPod(context.Background(), pod)
		if err := m.Refresh(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		want := 1
		if republish {
			want = 2
		}
		if len(f.setUps) != want {
			t.Errorf("requiresRepublish=%v: %d NodePublishVolume calls, want %d", republish, len(f.setUps), want)
		}
	}
}
