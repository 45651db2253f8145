package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Upstream's calculateEmptyDirMemorySize, case by case.
func TestTmpfsSize(t *testing.T) {
	gi := int64(1 << 30)
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	cases := []struct {
		name            string
		alloc, podLimit int64
		sizeLimit       *resource.Quantity
		want            int64
	}{
		{name: "node allocatable bounds it", alloc: 4 * gi, want: 4 * gi},
		{name: "pod limit below allocatable", alloc: 4 * gi, podLimit: gi, want: gi},
		{name: "pod limit above allocatable", alloc: gi, podLimit: 4 * gi, want: gi},
		{name: "sizeLimit below both", alloc: 4 * gi, podLimit: 2 * gi, sizeLimit: q("100Mi"), want: 100 << 20},
		{name: "sizeLimit above the pod limit", alloc: 4 * gi, podLimit: gi, sizeLimit: q("2Gi"), want: gi},
		{name: "zero sizeLimit ignored", alloc: 4 * gi, sizeLimit: q("0"), want: 4 * gi},
		{name: "allocatable unknown", podLimit: gi, want: gi},
		{name: "nothing known", want: 0},
	}
	for _, tc := range cases {
		if got := TmpfsSize(tc.alloc, tc.podLimit, tc.sizeLimit); got != tc.want {
			t.Errorf("%s: TmpfsSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTmpfsOptions(t *testing.T) {
	cases := []struct {
		size   int64
		noswap bool
		want   string
	}{
		{0, false, ""},
		{1024, false, "size=1024"},
		{1024, true, "size=1024,noswap"},
		{0, true, "noswap"},
	}
	for _, tc := range cases {
		if got := TmpfsOptions(tc.size, tc.noswap); got != tc.want {
			t.Errorf("TmpfsOptions(%d, %v) = %q, want %q", tc.size, tc.noswap, got, tc.want)
		}
	}
	for release, want := range map[string]bool{"6.4.0": true, "6.18.44-fc-v769": true, "7.0": true, "6.3.13": false, "5.15.0-91-generic": false, "": false} {
		if got := TmpfsNoswapSupported(release); got != want {
			t.Errorf("TmpfsNoswapSupported(%q) = %v, want %v", release, got, want)
		}
	}
}

func TestMemoryBackedAndLocal(t *testing.T) {
	cases := []struct {
		name          string
		src           v1.VolumeSource
		memory, local bool
	}{
		{"secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}, true, false},
		{"projected", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}, true, false},
		{"downwardAPI", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}, true, false},
		{"memory emptyDir", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}, true, false},
		{"disk emptyDir", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, false, true},
		{"configMap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}, false, true},
		{"hostPath", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{}}, false, false},
	}
	for _, tc := range cases {
		v := &v1.Volume{Name: "v", VolumeSource: tc.src}
		if MemoryBacked(v) != tc.memory || IsLocalEphemeral(v) != tc.local {
			t.Errorf("%s: MemoryBacked %v IsLocalEphemeral %v, want %v %v", tc.name, MemoryBacked(v), IsLocalEphemeral(v), tc.memory, tc.local)
		}
	}
}

// Secret, downwardAPI and projected volumes are written to a tmpfs sized as
// upstream sizes it, never to the node's disk; a second set-up (or a new
// kubelet process) reuses the tmpfs and what it holds; TearDown unmounts it.
func TestAPIDataVolumesOnTmpfs(t *testing.T) {
	requireRoot(t)
	src := &fakeSources{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}},
		secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"pw": []byte("s3cret")}}},
	}
	vols := []v1.Volume{
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}}}}}},
		{Name: "dapi", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: resource.NewQuantity(64<<20, resource.BinarySI)}}},
	}
	var mounts []v1.VolumeMount
	for _, v := range vols {
		mounts = append(mounts, v1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	pod, c := testPod(vols, mounts, nil)
	// Burstable with a memory limit on its only container: 32Mi bounds
	// every tmpfs but the emptyDir's larger sizeLimit is lowered to it too.
	c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}
	alloc := func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")} }
	m := newManager(t, Config{PodsDir: t.TempDir(), Sources: src, NodeAllocatable: alloc})
	if res := m.SetUpPod(context.Background(), pod); len(res.Failed) != 0 {
		t.Fatalf("SetUpPod: %+v", res)
	}
	for _, v := range vols {
		dir := VolumeDir(m.cfg.PodsDir, "uid-1", &v)
		line, ok := mountinfoHas(t, dir)
		if !MemoryBacked(&v) {
			if ok {
				t.Errorf("%s: mounted %q, want it on disk", v.Name, line)
			}
			continue
		}
		if !ok || !strings.Contains(line, " - tmpfs ") || !strings.Contains(line, "size=32768k") {
			t.Errorf("%s: mount %q, want a 32Mi tmpfs", v.Name, line)
		}
	}
	secDir := VolumeDir(m.cfg.PodsDir, "uid-1", &vols[0])
	if got := readThrough(t, secDir, "pw"); got != "s3cret" {
		t.Fatalf("pw = %q", got)
	}
	// A restart: a new manager reuses the tmpfs and its files, without
	// stacking a second one, and refreshes them in place.
	m2 := newManager(t, Config{PodsDir: m.cfg.PodsDir, Sources: src, NodeAllocatable: alloc})
	if res := m2.SetUpPod(context.Background(), pod); len(res.Failed) != 0 {
		t.Fatalf("SetUpPod after a restart: %+v", res)
	}
	src.secrets["sec"].Data["pw"] = []byte("rotated")
	if err := m2.Refresh(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(mustRead(t, "/proc/self/mountinfo"), " "+secDir+" "); n != 1 {
		t.Fatalf("%d mounts at %s, want 1", n, secDir)
	}
	if got := readThrough(t, secDir, "pw"); got != "rotated" {
		t.Fatalf("pw after refresh = %q", got)
	}
	must(t, m2.TearDown("uid-1"))
	for _, v := range vols {
		if line, ok := mountinfoHas(t, VolumeDir(m.cfg.PodsDir, "uid-1", &v)); ok {
			t.Errorf("%s still mounted after TearDown: %q", v.Name, line)
		}
	}
	// With the tmpfs gone the secret's bytes are gone: nothing was on disk.
	if _, err := os.Stat(filepath.Join(secDir, "pw")); !os.IsNotExist(err) {
		t.Fatalf("secret file on disk under the tmpfs: %v", err)
	}
}

// A secret volume an earlier kubelet wrote to disk stays there: mounting a
// tmpfs over it would hide the files from later updates of the running pod.
func TestAPIDataVolumePublishedOnDiskIsKept(t *testing.T) {
	requireRoot(t)
	src := &fakeSources{secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"pw": []byte("one")}}}}
	vols := []v1.Volume{{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}}}
	pod, _ := testPod(vols, []v1.VolumeMount{{Name: "sec", MountPath: "/s"}}, nil)
	m := newManager(t, Config{PodsDir: t.TempDir(), Sources: src})
	dir := VolumeDir(m.cfg.PodsDir, "uid-1", &vols[0])
	must(t, WriteAtomic(dir, map[string]FileProjection{"pw": {Data: []byte("one"), Mode: 0o644}}))
	src.secrets["sec"].Data["pw"] = []byte("two")
	if res := m.SetUpPod(context.Background(), pod); len(res.Failed) != 0 {
		t.Fatalf("SetUpPod: %+v", res)
	}
	must(t, m.Refresh(context.Background(), pod))
	if _, ok := mountinfoHas(t, dir); ok {
		t.Fatal("a tmpfs was mounted over a volume published on disk")
	}
	if got := readThrough(t, dir, "pw"); got != "two" {
		t.Fatalf("pw = %q, want the update in place", got)
	}
}
