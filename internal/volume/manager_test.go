package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type fakeSources struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (f *fakeSources) ConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
}

func (f *fakeSources) Secret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
}

func boolp(b bool) *bool { return &b }

func testPod(vols []v1.Volume, mounts []v1.VolumeMount, env []v1.EnvVar) (*v1.Pod, *v1.Container) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "x"}},
		Spec:       v1.PodSpec{Volumes: vols, Containers: []v1.Container{{Name: "c", VolumeMounts: mounts, Env: env}}},
	}
	return pod, &pod.Spec.Containers[0]
}

func TestMounts(t *testing.T) {
	hostDir := t.TempDir()
	src := &fakeSources{
		cms:     map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}},
		secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"pw": []byte("s3cret")}}},
	}
	dirType := v1.HostPathDirectory
	bidi := v1.MountPropagationBidirectional
	h2c := v1.MountPropagationHostToContainer
	none := v1.MountPropagationNone
	vols := []v1.Volume{
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &dirType}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: i32(0o400)}}},
		{Name: "dapi", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
		{Name: "missing-cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}},
		{Name: "opt-cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: boolp(true)}}},
		{Name: "missing-sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope"}}},
		{Name: "sa-only", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		{Name: "pvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "share", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}},
	}
	cases := []struct {
		name    string
		mount   v1.VolumeMount
		env     []v1.EnvVar
		wantErr string
		check   func(t *testing.T, podDir string, m *runtimeapi.Mount)
	}{
		{name: "emptyDir rw private", mount: v1.VolumeMount{Name: "cache", MountPath: "/cache"}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			want := filepath.Join(podDir, "volumes/kubernetes.io~empty-dir/cache")
			if m.HostPath != want || m.Readonly || m.Propagation != runtimeapi.MountPropagation_PROPAGATION_PRIVATE || m.ContainerPath != "/cache" {
				t.Fatalf("mount %+v", m)
			}
			if info, err := os.Stat(want); err != nil || info.Mode().Perm() != 0o777 {
				t.Fatalf("emptyDir %v %v", info, err)
			}
		}},
		{name: "emptyDir subPath created", mount: v1.VolumeMount{Name: "cache", MountPath: "/c", SubPath: "a/b"}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			if m.HostPath != filepath.Join(podDir, "volume-subpaths/cache/c/0") {
				t.Fatalf("host path %s, want the pinned bind mount", m.HostPath)
			}
			sameFile(t, m.HostPath, filepath.Join(podDir, "volumes/kubernetes.io~empty-dir/cache/a/b"))
			// Created with the volume's own mode, whatever the umask.
			if mode, _ := statOf(t, filepath.Join(podDir, "volumes/kubernetes.io~empty-dir/cache/a")); mode.Perm() != 0o777 || !mode.IsDir() {
				t.Fatalf("created subPath mode %v, want the volume's 0777", mode)
			}
		}},
		{name: "subPathExpr from env", mount: v1.VolumeMount{Name: "cache", MountPath: "/c", SubPathExpr: "$(POD)/$(X)"},
			env: []v1.EnvVar{{Name: "X", Value: "logs"}, {Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
				sameFile(t, m.HostPath, filepath.Join(podDir, "volumes/kubernetes.io~empty-dir/cache/p/logs"))
			}},
		{name: "subPathExpr missing var", mount: v1.VolumeMount{Name: "cache", MountPath: "/c", SubPathExpr: "$(NOPE)"}, wantErr: "missing value for NOPE"},
		{name: "subPath absolute", mount: v1.VolumeMount{Name: "cache", MountPath: "/c", SubPath: "/etc"}, wantErr: "error SubPath `/etc` must not be an absolute path"},
		{name: "subPath escape", mount: v1.VolumeMount{Name: "cache", MountPath: "/c", SubPath: "a/../../x"}, wantErr: "unable to provision SubPath `a/../../x`: must not contain '..'"},
		{name: "hostPath bidirectional ro", mount: v1.VolumeMount{Name: "host", MountPath: "/h", ReadOnly: true, MountPropagation: &bidi}, check: func(t *testing.T, _ string, m *runtimeapi.Mount) {
			if m.HostPath != hostDir || !m.Readonly || m.Propagation != runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL {
				t.Fatalf("mount %+v", m)
			}
		}},
		{name: "hostPath host-to-container", mount: v1.VolumeMount{Name: "host", MountPath: "/h", MountPropagation: &h2c}, check: func(t *testing.T, _ string, m *runtimeapi.Mount) {
			if m.Propagation != runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER {
				t.Fatalf("mount %+v", m)
			}
		}},
		{name: "configMap always read-only", mount: v1.VolumeMount{Name: "cfg", MountPath: "/cfg", MountPropagation: &none}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			if !m.Readonly || m.HostPath != filepath.Join(podDir, "volumes/kubernetes.io~configmap/cfg") {
				t.Fatalf("mount %+v", m)
			}
			if got := readThrough(t, m.HostPath, "k"); got != "v" {
				t.Fatalf("k = %q", got)
			}
		}},
		{name: "configMap subPath resolves file", mount: v1.VolumeMount{Name: "cfg", MountPath: "/cfg/k", SubPath: "k"}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			// k is a symlink into ..data: the bind mount pins the file it
			// resolves to inside the volume.
			sameFile(t, m.HostPath, filepath.Join(podDir, "volumes/kubernetes.io~configmap/cfg/k"))
			if b, err := os.ReadFile(m.HostPath); err != nil || string(b) != "v" {
				t.Fatalf("read %s: %q %v", m.HostPath, b, err)
			}
		}},
		{name: "configMap subPath missing", mount: v1.VolumeMount{Name: "cfg", MountPath: "/x", SubPath: "nokey"}, wantErr: "unable to provision SubPath `nokey`"},
		{name: "secret default mode", mount: v1.VolumeMount{Name: "sec", MountPath: "/s"}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			info, err := os.Stat(filepath.Join(m.HostPath, "pw"))
			if err != nil || info.Mode().Perm() != 0o400 || !m.Readonly {
				t.Fatalf("pw %v %v", info, err)
			}
		}},
		{name: "downwardAPI", mount: v1.VolumeMount{Name: "dapi", MountPath: "/d"}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			if got := readThrough(t, m.HostPath, "name"); got != "p" || !strings.HasSuffix(m.HostPath, "kubernetes.io~downward-api/dapi") {
				t.Fatalf("name = %q at %s", got, m.HostPath)
			}
		}},
		{name: "projected token without API server", mount: v1.VolumeMount{Name: "proj", MountPath: "/p"},
			wantErr: `MountVolume.SetUp failed for volume "proj" : serviceAccountToken projection "token": cannot get a service account token: the kubelet runs in standalone mode (no API server)`},
		{name: "missing configMap", mount: v1.VolumeMount{Name: "missing-cm", MountPath: "/m"}, wantErr: `MountVolume.SetUp failed for volume "missing-cm" : configmap "nope" not found`},
		{name: "missing secret", mount: v1.VolumeMount{Name: "missing-sec", MountPath: "/m"}, wantErr: `MountVolume.SetUp failed for volume "missing-sec" : secret "nope" not found`},
		{name: "optional missing configMap", mount: v1.VolumeMount{Name: "opt-cm", MountPath: "/m"}, check: func(t *testing.T, podDir string, m *runtimeapi.Mount) {
			entries, err := os.ReadDir(m.HostPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), "..") {
					t.Fatalf("unexpected entry %s", e.Name())
				}
			}
		}},
		{name: "projected only token", mount: v1.VolumeMount{Name: "sa-only", MountPath: "/t"}, wantErr: "standalone mode"},
		{name: "unsupported type", mount: v1.VolumeMount{Name: "share", MountPath: "/v"}, wantErr: `volume "share": unsupported volume type nfs`},
		{name: "claim without API server", mount: v1.VolumeMount{Name: "pvc", MountPath: "/v"}, wantErr: `error processing PVC ns/c: claims need the API server`},
		{name: "unknown volume", mount: v1.VolumeMount{Name: "ghost", MountPath: "/g"}, wantErr: `cannot find volume "ghost" to mount into container "c"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			podsDir := t.TempDir()
			m := newManager(t, Config{PodsDir: podsDir, Sources: src, NodeName: "n1"})
			pod, c := testPod(vols, []v1.VolumeMount{tc.mount}, tc.env)
			var mounts []*runtimeapi.Mount
			var err error
			for range 2 { // idempotent
				mounts, err = m.Mounts(pod, c)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(mounts) != 1 {
				t.Fatalf("mounts %v", mounts)
			}
			tc.check(t, filepath.Join(podsDir, "uid-1"), mounts[0])
		})
	}
}

func TestStandaloneWithoutSources(t *testing.T) {
	cases := []struct {
		name    string
		opt     bool
		wantErr string
	}{
		{name: "required configMap", wantErr: `configmap "cfg" not found`},
		{name: "optional configMap", opt: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, Config{PodsDir: t.TempDir()})
			pod, c := testPod([]v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: boolp(tc.opt)}}}},
				[]v1.VolumeMount{{Name: "v", MountPath: "/v"}}, nil)
			_, err := m.Mounts(pod, c)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRefreshUpdatesRunningVolume(t *testing.T) {
	cases := []struct {
		name   string
		update func(s *fakeSources)
		want   map[string]string
		gone   []string
	}{
		{name: "value changed", update: func(s *fakeSources) { s.cms["cfg"].Data["a"] = "2" }, want: map[string]string{"a": "2", "b": "b"}},
		{name: "key removed", update: func(s *fakeSources) { delete(s.cms["cfg"].Data, "b") }, want: map[string]string{"a": "1"}, gone: []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSources{cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"a": "1", "b": "b"}}}}
			m := newManager(t, Config{PodsDir: t.TempDir(), Sources: src})
			pod, c := testPod([]v1.Volume{
				{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "unused", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			}, []v1.VolumeMount{{Name: "v", MountPath: "/v"}}, nil)
			mounts, err := m.Mounts(pod, c)
			if err != nil {
				t.Fatal(err)
			}
			dir := mounts[0].HostPath
			before, _ := os.Readlink(filepath.Join(dir, dataDirName))
			tc.update(src)
			if err := m.Refresh(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			after, _ := os.Readlink(filepath.Join(dir, dataDirName))
			if before == after {
				t.Fatalf("..data did not switch (%s)", before)
			}
			for k, v := range tc.want {
				if got := readThrough(t, dir, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tc.gone {
				if _, err := os.Lstat(filepath.Join(dir, k)); !os.IsNotExist(err) {
					t.Errorf("%s still present", k)
				}
			}
			unused := VolumeDir(m.cfg.PodsDir, "uid-1", &pod.Spec.Volumes[1])
			if _, err := os.Stat(unused); !os.IsNotExist(err) {
				t.Errorf("refresh set up a volume nothing mounts: %v", err)
			}
		})
	}
}

// newManager returns a Manager whose mounts are undone when the test ends
// (before its temporary directories are removed).
func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.PodsDir == "" {
		cfg.PodsDir = t.TempDir()
	}
	m := New(cfg)
	t.Cleanup(func() {
		entries, _ := os.ReadDir(m.cfg.PodsDir)
		for _, e := range entries {
			if err := m.TearDown(e.Name()); err != nil {
				t.Errorf("tear down %s: %v", e.Name(), err)
			}
		}
	})
	return m
}

// sameFile fails unless a and b (following symlinks) are the same inode.
func sameFile(t *testing.T, a, b string) {
	t.Helper()
	ia, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(ia, ib) {
		t.Fatalf("%s is not bound to %s", a, b)
	}
}

func mountinfoHas(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == path {
			return line, true
		}
	}
	return "", false
}

func TestMemoryEmptyDirTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts tmpfs and must run as root")
	}
	size := resource.MustParse("8Mi")
	cases := []struct {
		name     string
		ed       *v1.EmptyDirVolumeSource
		wantOpts string
	}{
		{name: "with size limit", ed: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}, wantOpts: "size=8192k"},
		{name: "without size limit", ed: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			podsDir := t.TempDir()
			m := newManager(t, Config{PodsDir: podsDir})
			pod, c := testPod([]v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: tc.ed}}},
				[]v1.VolumeMount{{Name: "mem", MountPath: "/mem"}}, nil)
			dir := filepath.Join(podsDir, "uid-1", "volumes", pluginEmptyDir, "mem")
			t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
			for range 2 {
				if _, err := m.Mounts(pod, c); err != nil {
					t.Fatal(err)
				}
			}
			line, ok := mountinfoHas(t, dir)
			if !ok || !strings.Contains(line, " - tmpfs ") {
				t.Fatalf("no tmpfs at %s: %q", dir, line)
			}
			if tc.wantOpts != "" && !strings.Contains(line, tc.wantOpts) {
				t.Fatalf("mount %q lacks %s", line, tc.wantOpts)
			}
			if strings.Count(mustRead(t, "/proc/self/mountinfo"), " "+dir+" ") != 1 {
				t.Fatal("tmpfs mounted more than once")
			}
			if err := m.TearDown("uid-1"); err != nil {
				t.Fatal(err)
			}
			if _, ok := mountinfoHas(t, dir); ok {
				t.Fatal("tmpfs still mounted after TearDown")
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPropagation(t *testing.T) {
	none, h2c, bidi, bad := v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional, v1.MountPropagationMode("Sideways")
	cases := []struct {
		name    string
		in      *v1.MountPropagationMode
		want    runtimeapi.MountPropagation
		wantErr bool
	}{
		{"unset", nil, runtimeapi.MountPropagation_PROPAGATION_PRIVATE, false},
		{"None", &none, runtimeapi.MountPropagation_PROPAGATION_PRIVATE, false},
		{"HostToContainer", &h2c, runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, false},
		{"Bidirectional", &bidi, runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, false},
		{"invalid", &bad, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Propagation(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %v %v", got, err)
			}
		})
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"A": "x", "B": "y", "E": ""}
	cases := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "plain", in: "logs", want: "logs"},
		{name: "vars", in: "$(A)/$(B)-z", want: "x/y-z"},
		{name: "escaped dollar", in: "$$(A)", want: "$(A)"},
		{name: "lone dollar", in: "a$b$", want: "a$b$"},
		{name: "unterminated", in: "$(A", want: "$(A"},
		{name: "missing", in: "$(C)", wantErr: true},
		{name: "unterminated after an escape", in: "$$$(A", want: "$$(A"},
		{name: "empty value is missing", in: "$(E)", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandSubPathExpr(tc.in, env)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %q %v", got, err)
			}
		})
	} // Upstream names each missing variable once, sorted.
	if _, err := ExpandSubPathExpr("$(Z)/$(C)/$(Z)", env); err == nil || err.Error() != "missing value for C, Z" {
		t.Errorf("missing variables error = %v, want \"missing value for C, Z\"", err)
	}
}
