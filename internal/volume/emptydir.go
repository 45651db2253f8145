package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// TmpfsOptions returns the tmpfs mount data for a memory-backed emptyDir.
func TmpfsOptions(ed *v1.EmptyDirVolumeSource) string {
	if ed.SizeLimit != nil && ed.SizeLimit.Value() > 0 {
		return fmt.Sprintf("size=%d", ed.SizeLimit.Value())
	}
	return ""
}

// isMountPoint reports whether dir sits on a different device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, pst syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := syscall.Lstat(filepath.Dir(dir), &pst); err != nil {
		return false, err
	}
	return st.Dev != pst.Dev || st.Ino == pst.Ino, nil
}

func setUpEmptyDir(name, dir string, ed *v1.EmptyDirVolumeSource) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("emptyDir %q: create %s: %w", name, dir, err)
	}
	switch ed.Medium {
	case v1.StorageMediumDefault:
	case v1.StorageMediumMemory:
		mounted, err := isMountPoint(dir)
		if err != nil {
			return fmt.Errorf("emptyDir %q: check mount: %w", name, err)
		}
		if !mounted {
			if os.Geteuid() != 0 {
				return fmt.Errorf("emptyDir %q: medium Memory needs root to mount tmpfs at %s", name, dir)
			}
			opts := TmpfsOptions(ed)
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
				return fmt.Errorf("emptyDir %q: mount tmpfs at %s (%s): %w", name, dir, opts, err)
			}
			klog.V(2).InfoS("Mounted tmpfs for emptyDir", "volume", name, "path", dir, "options", opts)
		}
	default:
		return fmt.Errorf("emptyDir %q: unsupported medium %q", name, ed.Medium)
	}
	// Only when the permission bits differ: a chmod would also clear the
	// setgid bit an fsGroup set.
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("emptyDir %q: %w", name, err)
	}
	if info.Mode().Perm() != 0o777 {
		return os.Chmod(dir, 0o777)
	}
	return nil
}

// TearDown unmounts every tmpfs emptyDir of pod uid so that the pod directory
// can be removed; call it before deleting <PodsDir>/<uid>.
func (m *Manager) TearDown(uid string) error {
	if m.cfg.Tokens != nil {
		m.cfg.Tokens.ForgetPod(types.UID(uid))
	}
	if err := m.TearDownPluginVolumes(context.Background(), uid); err != nil {
		return err
	}
	dir := filepath.Join(m.cfg.PodsDir, uid, "volumes", pluginEmptyDir)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if mounted, err := isMountPoint(p); err == nil && mounted {
			if err := unix.Unmount(p, 0); err != nil {
				return fmt.Errorf("unmount emptyDir %q: %w", e.Name(), err)
			}
		}
	}
	m.forget(uid)
	return nil
}
