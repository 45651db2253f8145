package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/volume/csi"
	"github.com/seed-kubelet/kubelet/internal/volume/mountpoint"
)

// A local PersistentVolume on a block device, as upstream's local volume
// plugin keeps it: with volumeMode Filesystem the device is formatted when
// it has no filesystem yet (fsType, ext4 by default) and mounted at
// <root>/plugins/kubernetes.io/local-volume/mounts/<pv>, which is
// bind-mounted into each pod; with volumeMode Block the device is mapped
// into the container through <podsDir>/<uid>/volumeDevices/
// kubernetes.io~local-volume/<pv>, a link to it.
const localDeviceMounts = "plugins/kubernetes.io/local-volume/mounts"

// isBlockDevice reports whether path is a block device.
func isBlockDevice(fi fs.FileInfo) bool {
	return fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0
}

// localGlobalMount is where a block-backed local volume is mounted once.
func (m *Manager) localGlobalMount(pv string) string {
	return filepath.Join(filepath.Dir(m.cfg.PodsDir), localDeviceMounts, pv)
}

// mountLocalDevice formats the device if it has no filesystem and mounts it
// at the volume's global mount (once), returning that directory.
func (m *Manager) mountLocalDevice(pv *v1.PersistentVolume, dev string) (string, error) {
	global := m.localGlobalMount(pv.Name)
	if ok, err := mountpoint.IsMountPoint(global); err != nil || ok {
		return global, err
	}
	fsType := "ext4"
	if pv.Spec.Local.FSType != nil && *pv.Spec.Local.FSType != "" {
		fsType = *pv.Spec.Local.FSType
	}
	existing, err := deviceFSType(dev)
	if err != nil {
		return "", err
	}
	if existing == "" {
		args := []string{"-F", "-m0", dev}
		if fsType != "ext4" && fsType != "ext3" {
			args = []string{dev}
		}
		klog.InfoS("Formatting local volume device", "pv", pv.Name, "device", dev, "fsType", fsType)
		if out, err := exec.Command("mkfs."+fsType, args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("format %s as %s: %v: %s", dev, fsType, err, strings.TrimSpace(string(out)))
		}
		existing = fsType
	} else if existing != fsType && pv.Spec.Local.FSType != nil {
		return "", fmt.Errorf("device %s holds a %s filesystem, the volume says %s", dev, existing, fsType)
	}
	if err := os.MkdirAll(global, 0o750); err != nil {
		return "", err
	}
	if err := unix.Mount(dev, global, existing, 0, strings.Join(pv.Spec.MountOptions, ",")); err != nil {
		return "", fmt.Errorf("mount %s (%s) at %s: %w", dev, existing, global, err)
	}
	klog.V(2).InfoS("Mounted local volume device", "pv", pv.Name, "device", dev, "path", global)
	return global, nil
}

// deviceFSType is the filesystem on dev as blkid sees it, "" for none.
func deviceFSType(dev string) (string, error) {
	out, err := exec.Command("blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", dev).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		return "", nil // nothing on it
	}
	if err != nil {
		return "", fmt.Errorf("blkid %s: %w", dev, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "TYPE="); ok {
			return v, nil
		}
		if _, ok := strings.CutPrefix(line, "PTTYPE="); ok {
			return "", fmt.Errorf("device %s holds a partition table, not a filesystem", dev)
		}
	}
	return "", nil
}

// mapLocalDevice links the pod's device map path to a local volume's block
// device and returns the link.
func (m *Manager) mapLocalDevice(pod *v1.Pod, pv *v1.PersistentVolume) (string, error) {
	fi, err := os.Stat(pv.Spec.Local.Path)
	if err != nil || !isBlockDevice(fi) {
		return "", &csi.OpError{Op: "MapVolume.MapPodDevice", Volume: pv.Name, Err: fmt.Errorf("path %q is not a block device", pv.Spec.Local.Path)}
	}
	dir := filepath.Join(m.cfg.PodsDir, string(pod.UID), "volumeDevices", pluginLocalVolume)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	link := filepath.Join(dir, pv.Name)
	if cur, err := os.Readlink(link); err != nil || cur != pv.Spec.Local.Path {
		os.Remove(link)
		if err := os.Symlink(pv.Spec.Local.Path, link); err != nil {
			return "", &csi.OpError{Op: "MapVolume.MapPodDevice", Volume: pv.Name, Err: err}
		}
	}
	return link, nil
}

// releaseLocalDevices unmounts the global mounts of block-backed local
// volumes no pod bind-mounts any more, and removes the pod's device links.
func (m *Manager) releaseLocalDevices(uid string) error {
	os.RemoveAll(filepath.Join(m.cfg.PodsDir, uid, "volumeDevices", pluginLocalVolume))
	base := filepath.Join(filepath.Dir(m.cfg.PodsDir), localDeviceMounts)
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		global := filepath.Join(base, e.Name())
		inUse, _ := filepath.Glob(filepath.Join(m.cfg.PodsDir, "*", "volumes", pluginLocalVolume, e.Name()))
		used := false
		for _, p := range inUse {
			if ok, _ := mountpoint.IsMountPoint(p); ok {
				used = true
			}
		}
		if used {
			continue
		}
		if ok, _ := mountpoint.IsMountPoint(global); ok {
			if err := unix.Unmount(global, 0); err != nil {
				errs = append(errs, fmt.Errorf("unmount local volume device at %s: %w", global, err))
				continue
			}
		}
		os.Remove(global)
	}
	return errors.Join(errs...)
}
