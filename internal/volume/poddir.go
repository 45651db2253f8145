package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ErrMountedBelow is returned when a pod directory still has something
// mounted below it: removing it would delete through the mount.
var ErrMountedBelow = errors.New("something is mounted below the directory")

// ErrCrossDevice is returned when a removal meets another filesystem.
var ErrCrossDevice = errors.New("refusing to cross a filesystem boundary")

// tmpfsPlugins are the plugin directories whose volumes may be a tmpfs the
// kubelet mounted (Memory emptyDirs; secret, downwardAPI and projected
// volumes).
var tmpfsPlugins = []string{pluginEmptyDir, pluginSecret, pluginDownwardAPI, pluginProjected}

// TearDown undoes what the manager mounted for pod uid — its plugin
// volumes (CSI unpublish and unstage, local devices), the subPath bind
// mounts and the tmpfs of its memory-backed volumes — and forgets the pod.
// It only needs the UID, so it also cleans up after pods that went while
// the kubelet was down. Mounts it did not make are left alone (the pod
// directory is then not removed: RemovePodDir refuses).
func (m *Manager) TearDown(uid string) error {
	l := m.podLock(uid)
	l.Lock()
	defer l.Unlock()
	if m.cfg.Tokens != nil {
		m.cfg.Tokens.ForgetPod(types.UID(uid))
	}
	if err := m.tearDownPlugins(context.Background(), uid); err != nil {
		return err
	}
	podDir := filepath.Join(m.cfg.PodsDir, uid)
	if err := cleanSubPaths(podDir); err != nil {
		return fmt.Errorf("clean subPaths of pod %s: %w", uid, err)
	}
	for _, plugin := range tmpfsPlugins {
		dir := filepath.Join(podDir, "volumes", plugin)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range entries {
			if err := unmountTmpfs(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("volume %q: %w", e.Name(), err)
			}
		}
	}
	m.forget(uid)
	return nil
}

// unmountTmpfs unmounts the tmpfs mounts stacked at dir (none is fine).
func unmountTmpfs(dir string) error {
	ms, err := mountsAt(dir)
	if err != nil {
		return err
	}
	for _, mi := range ms {
		if mi.FSType != "tmpfs" {
			break // not ours: leave it (and whatever is below it)
		}
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmount tmpfs at %s: %w", dir, err)
		}
		klog.V(3).InfoS("Unmounted tmpfs", "path", dir)
	}
	return nil
}

// RemovePodDir removes <PodsDir>/<uid> unless anything is mounted below it
// (ErrMountedBelow), and never leaves its filesystem while removing. Call
// TearDown first.
func (m *Manager) RemovePodDir(uid string) error {
	if uid == "" || strings.ContainsRune(uid, '/') || uid == "." || uid == ".." {
		return fmt.Errorf("invalid pod UID %q", uid)
	}
	l := m.podLock(uid)
	l.Lock()
	defer l.Unlock()
	return RemovePodDir(filepath.Join(m.cfg.PodsDir, uid))
}

// RemovePodDir removes dir (a pod directory) unless something is mounted
// at or below it, on dir's filesystem only.
func RemovePodDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ms, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	if len(ms) > 0 {
		points := make([]string, 0, len(ms))
		for _, m := range ms {
			points = append(points, m.Mountpoint)
		}
		return fmt.Errorf("remove %s: %w: %s", dir, ErrMountedBelow, strings.Join(points, ", "))
	}
	return removeAllOneFilesystem(dir)
}

// removeAllOneFilesystem is os.RemoveAll that stays on path's filesystem:
// it works relative to open directories, never follows a symlink, and
// stops with ErrCrossDevice at a mount point (another device, or a bind
// mount of the same one where the kernel can tell: openat2
// RESOLVE_NO_XDEV), as upstream's RemoveAllOneFilesystem.
func removeAllOneFilesystem(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return ignoreENOENT(unix.Unlink(path), "unlink", path)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return ignoreENOENT(err, "open", path)
	}
	err = removeChildren(fd, st.Dev, path)
	unix.Close(fd)
	if err != nil {
		return err
	}
	return ignoreENOENT(unix.Rmdir(path), "rmdir", path)
}

func removeChildren(dirfd int, dev uint64, path string) error {
	names, err := readDirNames(dirfd, path)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := filepath.Join(path, name)
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
		if st.Dev != dev {
			return fmt.Errorf("remove %s: %w", p, ErrCrossDevice)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return &fs.PathError{Op: "unlink", Path: p, Err: err}
			}
			continue
		}
		child, err := openDirNoXdev(dirfd, name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("remove %s: %w (a mount point)", p, ErrCrossDevice)
		}
		if err != nil {
			return &fs.PathError{Op: "open", Path: p, Err: err}
		}
		var cst unix.Stat_t
		if err := unix.Fstat(child, &cst); err != nil || cst.Dev != dev {
			unix.Close(child)
			if err != nil {
				return &fs.PathError{Op: "stat", Path: p, Err: err}
			}
			return fmt.Errorf("remove %s: %w", p, ErrCrossDevice)
		}
		err = removeChildren(child, dev, p)
		unix.Close(child)
		if err != nil {
			return err
		}
		if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			return &fs.PathError{Op: "rmdir", Path: p, Err: err}
		}
	}
	return nil
}

// openDirNoXdev opens the directory name below dirfd without following a
// symlink; where openat2 exists it also refuses to enter a mount point
// (EXDEV), bind mounts of the same filesystem included.
func openDirNoXdev(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !openat2Missing.Load() {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH})
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		openat2Missing.Store(true)
	}
	return unix.Openat(dirfd, name, flags, 0)
}

// readDirNames lists the directory open at dirfd (without moving dirfd's
// own offset: a duplicate is read).
func readDirNames(dirfd int, path string) ([]string, error) {
	dup, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	return names, nil
}

func ignoreENOENT(err error, op, path string) error {
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
