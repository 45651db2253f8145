package volume

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestUsedVolumes(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		Volumes:        []v1.Volume{{Name: "a"}, {Name: "unused"}, {Name: "b"}, {Name: "c"}},
		InitContainers: []v1.Container{{Name: "i", VolumeMounts: []v1.VolumeMount{{Name: "c"}}}},
		Containers:     []v1.Container{{Name: "m", VolumeMounts: []v1.VolumeMount{{Name: "a"}, {Name: "a", SubPath: "x"}}}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "e", VolumeMounts: []v1.VolumeMount{{Name: "b"}}}}},
	}}
	if got, want := UsedVolumes(pod), []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UsedVolumes = %v, want %v", got, want)
	}
}

// A missing non-optional source keeps the volume unmounted, with upstream's
// message; once the source exists the volume is set up, and a source that
// disappears afterwards does not take the volume away.
func TestSetUpPodWaitsForSource(t *testing.T) {
	src := &fakeSources{cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	m := newManager(t, Config{PodsDir: t.TempDir(), Sources: src})
	vols := []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "late"}}}},
		{Name: "keyed", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", Items: []v1.KeyToPath{{Key: "pw", Path: "pw"}}}}},
		{Name: "never-used", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}},
	}
	pod, _ := testPod(vols, []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "keyed", MountPath: "/sec"}}, nil)
	src.secrets["sec"] = &v1.Secret{Data: map[string][]byte{"other": []byte("x")}}

	res := m.SetUpPod(context.Background(), pod)
	if !reflect.DeepEqual(res.Unmounted, []string{"cfg", "keyed"}) || len(res.Failed) != 2 {
		t.Fatalf("SetUpPod = %+v", res)
	}
	if got, want := res.Failed[0].Message(), `MountVolume.SetUp failed for volume "cfg" : configmap "late" not found`; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if got := res.Failed[1].Message(); !strings.Contains(got, `volume "keyed"`) || !strings.Contains(got, "references non-existent secret key: pw") {
		t.Fatalf("message %q", got)
	}

	src.cms["late"] = &v1.ConfigMap{Data: map[string]string{"k": "v"}}
	src.secrets["sec"].Data["pw"] = []byte("s3cret")
	if res := m.SetUpPod(context.Background(), pod); len(res.Unmounted) != 0 || len(res.Failed) != 0 {
		t.Fatalf("after the sources appeared: %+v", res)
	}
	data, err := os.ReadFile(filepath.Join(VolumeDir(m.cfg.PodsDir, "uid-1", &vols[0]), "k"))
	if err != nil || string(data) != "v" {
		t.Fatalf("configMap file %q %v", data, err)
	}

	delete(src.cms, "late")
	if res := m.SetUpPod(context.Background(), pod); len(res.Unmounted) != 0 {
		t.Fatalf("a set-up volume must stay mounted when its source goes: %+v", res)
	}
	if _, err := m.Mounts(pod, &pod.Spec.Containers[0]); err != nil {
		t.Fatalf("a container restart must reuse the mounted volume: %v", err)
	}
	// A new kubelet process finds the published volume on disk.
	m2 := newManager(t, Config{PodsDir: m.cfg.PodsDir, Sources: src})
	if res := m2.SetUpPod(context.Background(), pod); len(res.Unmounted) != 0 {
		t.Fatalf("after a restart: %+v", res)
	}
}

func statOf(t *testing.T, p string) (os.FileMode, uint32) {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode(), info.Sys().(*syscall.Stat_t).Gid
}

func TestFSGroupOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary fsGroup needs root")
	}
	const gid = 4321
	src := &fakeSources{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}}
	vols := []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: i32(0o400)}}},
	}
	pod, c := testPod(vols, []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}, {Name: "cfg", MountPath: "/c"}}, nil)
	fsGroup := int64(gid)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup}
	m := newManager(t, Config{PodsDir: t.TempDir(), Sources: src})
	if _, err := m.Mounts(pod, c); err != nil {
		t.Fatal(err)
	}
	scratch := VolumeDir(m.cfg.PodsDir, "uid-1", &vols[0])
	if mode, g := statOf(t, scratch); g != gid || mode&os.ModeSetgid == 0 || mode.Perm() != 0o777 {
		t.Fatalf("emptyDir mode %v gid %d", mode, g)
	}
	cfgDir := VolumeDir(m.cfg.PodsDir, "uid-1", &vols[1])
	if mode, g := statOf(t, filepath.Join(cfgDir, "k")); g != gid || mode.Perm() != 0o440 {
		t.Fatalf("configMap file mode %v gid %d, want 0440 and the fsGroup", mode, g)
	}
	if mode, g := statOf(t, filepath.Join(cfgDir, dataDirName)); g != gid || mode&os.ModeSetgid == 0 {
		t.Fatalf("configMap data dir mode %v gid %d", mode, g)
	}
	// A refresh with unchanged contents keeps everything as it is.
	if err := m.Refresh(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if mode, g := statOf(t, filepath.Join(cfgDir, "k")); g != gid || mode.Perm() != 0o440 {
		t.Fatalf("after refresh: mode %v gid %d", mode, g)
	}
}

func TestFSGroupChangePolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group needs root")
	}
	gid := int64(4322)
	onRoot := v1.FSGroupChangeOnRootMismatch
	always := v1.FSGroupChangeAlways
	for _, tc := range []struct {
		name       string
		policy     *v1.PodFSGroupChangePolicy
		wantInside uint32
	}{
		{name: "Always walks the whole volume", policy: &always, wantInside: uint32(gid)},
		{name: "unset means Always", wantInside: uint32(gid)},
		{name: "OnRootMismatch skips a matching root", policy: &onRoot, wantInside: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			inner := filepath.Join(dir, "f")
			if err := os.WriteFile(inner, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			// The root already matches: the fsGroup, setgid and group rw.
			if err := os.Chown(dir, 0, int(gid)); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o770|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
			if err := setOwnership(dir, &gid, tc.policy, false); err != nil {
				t.Fatal(err)
			}
			mode, g := statOf(t, inner)
			if g != tc.wantInside {
				t.Fatalf("inner file gid %d, want %d", g, tc.wantInside)
			}
			if tc.wantInside != 0 && mode.Perm() != 0o660 {
				t.Fatalf("inner file mode %v, want 0660", mode)
			}
		})
	}
	t.Run("OnRootMismatch walks a mismatching root", func(t *testing.T) {
		dir := t.TempDir()
		inner := filepath.Join(dir, "f")
		if err := os.WriteFile(inner, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := setOwnership(dir, &gid, &onRoot, false); err != nil {
			t.Fatal(err)
		}
		if _, g := statOf(t, inner); g != uint32(gid) {
			t.Fatalf("inner gid %d", g)
		}
	})
}

func TestOwnershipMode(t *testing.T) {
	cases := []struct {
		cur      os.FileMode
		readOnly bool
		want     os.FileMode
	}{
		{cur: 0o644, readOnly: true, want: 0o644},
		{cur: 0o400, readOnly: true, want: 0o440},
		{cur: 0o600, want: 0o660},
		{cur: os.ModeDir | 0o755, readOnly: true, want: os.ModeSetgid | 0o755},
		{cur: os.ModeDir | 0o700, want: os.ModeSetgid | 0o770},
	}
	for _, tc := range cases {
		if got := ownershipMode(tc.cur, tc.readOnly); got != tc.want {
			t.Errorf("ownershipMode(%v, ro=%v) = %v, want %v", tc.cur, tc.readOnly, got, tc.want)
		}
	}
}

// Setting an emptyDir up again (a tmpfs check, a kubelet restart) keeps
// the setgid bit an fsGroup gave it.
func TestEmptyDirSetUpKeepsSetgid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ed")
	m := newManager(t, Config{PodsDir: t.TempDir()})
	if err := m.setUpEmptyDir("ed", dir, &v1.EmptyDirVolumeSource{}, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := m.setUpEmptyDir("ed", dir, &v1.EmptyDirVolumeSource{}, 0); err != nil {
		t.Fatal(err)
	}
	if mode, _ := statOf(t, dir); mode&os.ModeSetgid == 0 || mode.Perm() != 0o777 {
		t.Fatalf("mode %v after a second set-up", mode)
	}
}
