package volume

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts and must run as root (as CI does)")
	}
}

// openers are the two ways openBeneath walks: the kernel's openat2 and the
// component-wise fallback for kernels before 5.6.
var openers = map[string]func(root int, rel string) (int, error){
	"openat2":   openBeneathOpenat2,
	"component": openBeneathWalk,
}

func TestOpenBeneath(t *testing.T) {
	base := t.TempDir()
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "a/b/f"), []byte("x"), 0o644))
	must(t, os.Symlink("b", filepath.Join(base, "a/inner")))
	must(t, os.Symlink(outside, filepath.Join(base, "abs")))
	must(t, os.Symlink("../..", filepath.Join(base, "a/up")))
	cases := []struct {
		rel    string
		wantOK bool
	}{
		{".", true},
		{"a", true},
		{"a/b/f", true},
		{"a/inner", false},   // a symlink, even one inside the volume
		{"a/inner/f", false}, // a symlink on the way
		{"abs", false},       // to a host directory
		{"a/up/etc", false},
		{"missing", false},
	}
	root, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(root)
	for name, open := range openers {
		for _, tc := range cases {
			t.Run(name+"/"+tc.rel, func(t *testing.T) {
				fd, err := open(root, tc.rel)
				if (err == nil) != tc.wantOK {
					t.Fatalf("open %q: err %v, want ok=%v", tc.rel, err, tc.wantOK)
				}
				if err != nil {
					return
				}
				defer unix.Close(fd)
				var st, want unix.Stat_t
				must(t, unix.Fstat(fd, &st))
				must(t, unix.Lstat(filepath.Join(base, tc.rel), &want))
				if st.Ino != want.Ino {
					t.Fatalf("opened the wrong file for %q", tc.rel)
				}
			})
		}
	}
}

// CVE-2017-1002101: a container plants a symlink to a host directory in a
// shared volume; another container's missing subPath below it must not be
// created on the host.
func TestSafeMakeDir(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, base, outside string)
		subPath string
		wantErr bool
	}{
		{name: "nested new dirs", subPath: "x/y/z"},
		{name: "below an existing dir", prepare: func(t *testing.T, base, _ string) { must(t, os.Mkdir(filepath.Join(base, "x"), 0o700)) }, subPath: "x/y"},
		{name: "below a symlink inside the volume", prepare: func(t *testing.T, base, _ string) {
			must(t, os.Mkdir(filepath.Join(base, "real"), 0o700))
			must(t, os.Symlink("real", filepath.Join(base, "link")))
		}, subPath: "link/y"},
		{name: "symlink to a host dir", prepare: func(t *testing.T, base, outside string) {
			must(t, os.Symlink(outside, filepath.Join(base, "escape")))
		}, subPath: "escape/created", wantErr: true},
		{name: "relative symlink out", prepare: func(t *testing.T, base, outside string) {
			rel, err := filepath.Rel(base, outside)
			must(t, err)
			must(t, os.Symlink(rel, filepath.Join(base, "escape")))
		}, subPath: "escape/created", wantErr: true},
		{name: "dangling symlink as the new dir", prepare: func(t *testing.T, base, outside string) {
			must(t, os.Symlink(filepath.Join(outside, "created"), filepath.Join(base, "created")))
		}, subPath: "created", wantErr: true},
	}
	perm := os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o777
	for _, tc := range cases {
		for name := range openers {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				openat2Missing.Store(name == "component")
				defer openat2Missing.Store(false)
				base, outside := t.TempDir(), t.TempDir()
				if tc.prepare != nil {
					tc.prepare(t, base, outside)
				}
				old := unix.Umask(0o077)
				err := safeMakeDir(base, tc.subPath, perm)
				unix.Umask(old)
				if entries, _ := os.ReadDir(outside); len(entries) != 0 {
					t.Fatalf("created %v outside the volume", entries[0].Name())
				}
				if tc.wantErr {
					if err == nil {
						t.Fatal("want an error")
					}
					return
				}
				must(t, err)
				full := filepath.Join(base, tc.subPath)
				info, err := os.Stat(full)
				must(t, err)
				// The volume's mode, setgid and sticky included, despite umask 077.
				if info.Mode() != perm {
					t.Fatalf("mode %v, want %v", info.Mode(), perm)
				}
			})
		}
	}
}

// CVE-2021-25741: between the kubelet's check and the runtime's mount, a
// container sharing the volume renames the subPath away and puts a symlink
// to the host in its place. The runtime mounts the bind target, which still
// holds the checked directory.
func TestBindSubPathPinsTheCheckedInode(t *testing.T) {
	requireRoot(t)
	for name := range openers {
		t.Run(name, func(t *testing.T) {
			openat2Missing.Store(name == "component")
			defer openat2Missing.Store(false)
			podDir, host := t.TempDir(), t.TempDir()
			vol := filepath.Join(podDir, "volumes/kubernetes.io~empty-dir/data")
			must(t, os.MkdirAll(filepath.Join(vol, "sub"), 0o777))
			must(t, os.WriteFile(filepath.Join(vol, "sub", "mine"), []byte("volume"), 0o644))
			must(t, os.WriteFile(filepath.Join(host, "host-secret"), []byte("host"), 0o600))
			t.Cleanup(func() { must(t, cleanSubPaths(podDir)) })

			req := subPathRequest{VolumePath: vol, SubPath: "sub", Create: true, Target: SubPathTarget(podDir, "data", "c", 0)}
			got, err := bindSubPath(req)
			must(t, err)
			if got != req.Target {
				t.Fatalf("host path %s, want %s", got, req.Target)
			}
			// The swap.
			must(t, os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "sub.old")))
			must(t, os.Symlink(host, filepath.Join(vol, "sub")))
			if _, err := os.Stat(filepath.Join(got, "host-secret")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the bind target reaches the host directory (err %v)", err)
			}
			if b, err := os.ReadFile(filepath.Join(got, "mine")); err != nil || string(b) != "volume" {
				t.Fatalf("the bind target lost the checked directory: %q %v", b, err)
			}
			// A container started later (a restart) may not follow the
			// symlink either: the stale target is re-checked.
			if _, err := bindSubPath(subPathRequest{VolumePath: vol, SubPath: "sub", Create: true, Target: SubPathTarget(podDir, "data", "c", 1)}); err == nil {
				t.Fatal("a subPath that is now a symlink to the host was bound")
			}
			// Set up again for the same mount: kept as it is (same inode
			// through the rename), once mounted.
			must(t, os.Remove(filepath.Join(vol, "sub")))
			must(t, os.Rename(filepath.Join(vol, "sub.old"), filepath.Join(vol, "sub")))
			if _, err := bindSubPath(req); err != nil {
				t.Fatal(err)
			}
			ms, err := mountsAt(req.Target)
			must(t, err)
			if len(ms) != 1 {
				t.Fatalf("%d mounts at the target, want 1", len(ms))
			}
			// The directory replaced by another one inside the volume: the
			// target follows the new inode.
			must(t, os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "sub.old")))
			must(t, os.Mkdir(filepath.Join(vol, "sub"), 0o777))
			must(t, os.WriteFile(filepath.Join(vol, "sub", "new"), nil, 0o644))
			if _, err := bindSubPath(req); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(req.Target, "new")); err != nil {
				t.Fatalf("target not re-bound to the new directory: %v", err)
			}
			if ms, _ := mountsAt(req.Target); len(ms) != 1 {
				t.Fatalf("%d mounts at the target after re-binding, want 1", len(ms))
			}
			// A file subPath gets a file target.
			fileReq := subPathRequest{VolumePath: vol, SubPath: "sub/new", Target: SubPathTarget(podDir, "data", "c", 2)}
			if _, err := bindSubPath(fileReq); err != nil {
				t.Fatal(err)
			}
			if info, err := os.Lstat(fileReq.Target); err != nil || !info.Mode().IsRegular() {
				t.Fatalf("file target %v %v", info, err)
			}
			// A subPath that turned from a directory into a file gets a
			// file target in place of the old placeholder.
			must(t, unmountAll(req.Target))
			must(t, os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "sub.dir")))
			must(t, os.WriteFile(filepath.Join(vol, "sub"), []byte("now a file"), 0o644))
			if _, err := bindSubPath(req); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(req.Target); err != nil || string(b) != "now a file" {
				t.Fatalf("target after the type change: %q %v", b, err)
			}
			// Teardown unmounts and removes them all.
			must(t, cleanSubPaths(podDir))
			if _, err := os.Lstat(filepath.Join(podDir, subPathsDirName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("volume-subpaths left: %v", err)
			}
			if _, err := os.Stat(filepath.Join(vol, "sub.dir", "new")); err != nil {
				t.Fatalf("teardown removed volume data: %v", err)
			}
		})
	}
}

func TestBindSubPathRefusesEscapes(t *testing.T) {
	requireRoot(t)
	podDir, host := t.TempDir(), t.TempDir()
	vol := filepath.Join(podDir, "vol")
	must(t, os.MkdirAll(vol, 0o777))
	must(t, os.Symlink(host, filepath.Join(vol, "abs")))
	must(t, os.Symlink("../../..", filepath.Join(vol, "rel")))
	t.Cleanup(func() { must(t, cleanSubPaths(podDir)) })
	for i, sp := range []string{"abs", "rel", "abs/x", "rel/etc"} {
		_, err := bindSubPath(subPathRequest{VolumePath: vol, SubPath: sp, Create: true, Target: SubPathTarget(podDir, "vol", "c", i)})
		if err == nil {
			t.Errorf("subPath %q escaping the volume was bound", sp)
		}
	}
	if entries, _ := os.ReadDir(host); len(entries) != 0 {
		t.Fatalf("created %s on the host", entries[0].Name())
	}
	if ms, _ := mountsBelow(podDir); len(ms) != 0 {
		t.Fatalf("mounts left: %v", ms[0].Mountpoint)
	}
}

// A pod directory with a mount left below it is never removed; once the
// mount is gone it is. Removal stays on one filesystem.
func TestRemovePodDir(t *testing.T) {
	requireRoot(t)
	cases := []struct {
		name  string
		mount func(t *testing.T, src, at string) error
	}{
		{name: "bind mount of the same filesystem", mount: func(_ *testing.T, src, at string) error {
			return unix.Mount(src, at, "", unix.MS_BIND, "")
		}},
		{name: "tmpfs", mount: func(t *testing.T, _, at string) error {
			if err := unix.Mount("tmpfs", at, "tmpfs", 0, "size=1m"); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(at, "precious"), []byte("keep"), 0o644)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, host := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(host, "precious"), []byte("keep"), 0o644))
			podDir := filepath.Join(pods, "uid-1")
			at := filepath.Join(podDir, "volumes/kubernetes.io~csi/v/mount")
			must(t, os.MkdirAll(at, 0o755))
			must(t, os.WriteFile(filepath.Join(podDir, "etc-hosts"), nil, 0o644))
			must(t, tc.mount(t, host, at))
			t.Cleanup(func() { _ = unix.Unmount(at, unix.MNT_DETACH) })

			m := newManager(t, Config{PodsDir: pods})
			must(t, m.TearDown("uid-1")) // a mount it did not make stays
			err := m.RemovePodDir("uid-1")
			if !errors.Is(err, ErrMountedBelow) || !strings.Contains(err.Error(), at) {
				t.Fatalf("RemovePodDir = %v, want ErrMountedBelow naming %s", err, at)
			}
			if b, err := os.ReadFile(filepath.Join(at, "precious")); err != nil || string(b) != "keep" {
				t.Fatalf("data behind the mount: %q %v", b, err)
			}
			// Even without the mount-table check, the removal itself stops
			// at the mount point.
			err = removeAllOneFilesystem(podDir)
			if !errors.Is(err, ErrCrossDevice) {
				t.Fatalf("removeAllOneFilesystem = %v, want ErrCrossDevice", err)
			}
			if b, err := os.ReadFile(filepath.Join(at, "precious")); err != nil || string(b) != "keep" {
				t.Fatalf("removal deleted through the mount: %q %v", b, err)
			}
			must(t, unix.Unmount(at, 0))
			must(t, m.RemovePodDir("uid-1"))
			if _, err := os.Lstat(podDir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("pod dir left: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(host, "precious")); err != nil || string(b) != "keep" {
				t.Fatalf("the bind source: %q %v", b, err)
			}
		})
	}
}

// removeAllOneFilesystem never follows a symlink out of the tree.
func TestRemoveAllOneFilesystemKeepsSymlinkTargets(t *testing.T) {
	dir, host := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(host, "f"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	must(t, os.Symlink(host, filepath.Join(dir, "a/b/link")))
	must(t, os.Symlink(host, filepath.Join(dir, "link")))
	must(t, removeAllOneFilesystem(dir))
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(host, "f")); err != nil {
		t.Fatalf("symlink target removed: %v", err)
	}
}

// TearDown also cleans up after a pod of an earlier kubelet process (a
// restart): subPath binds and the tmpfs of memory-backed volumes.
func TestTearDownAfterRestart(t *testing.T) {
	requireRoot(t)
	src := &fakeSources{secrets: map[string]*v1.Secret{"sec": {Data: map[string][]byte{"pw": []byte("s3cret")}}}}
	vols := []v1.Volume{
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	pod, c := testPod(vols, []v1.VolumeMount{{Name: "sec", MountPath: "/s"}, {Name: "scratch", MountPath: "/x", SubPath: "a"}, {Name: "sec", MountPath: "/pw", SubPath: "pw"}}, nil)
	pods := t.TempDir()
	m := New(Config{PodsDir: pods, Sources: src})
	if _, err := m.Mounts(pod, c); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(pods, "uid-1")
	if ms, _ := mountsBelow(podDir); len(ms) != 3 {
		t.Fatalf("%d mounts below the pod dir, want 3 (secret tmpfs, two subPaths)", len(ms))
	}
	// A new process knows nothing of the pod.
	m2 := New(Config{PodsDir: pods})
	must(t, m2.TearDown("uid-1"))
	if ms, _ := mountsBelow(podDir); len(ms) != 0 {
		t.Fatalf("mount left after TearDown: %s", ms[0].Mountpoint)
	}
	must(t, m2.RemovePodDir("uid-1"))
	if _, err := os.Lstat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pod dir left: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
