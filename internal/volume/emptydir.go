package volume

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
)

// setUpEmptyDir creates an emptyDir (mounting its tmpfs for medium Memory,
// sized by size) with upstream's mode 0777.
func (m *Manager) setUpEmptyDir(name, dir string, ed *v1.EmptyDirVolumeSource, size int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("emptyDir %q: create %s: %w", name, dir, err)
	}
	switch ed.Medium {
	case v1.StorageMediumDefault:
	case v1.StorageMediumMemory:
		if err := m.ensureTmpfs(dir, size); err != nil {
			return fmt.Errorf("emptyDir %q: %w", name, err)
		}
	default:
		return fmt.Errorf("emptyDir %q: unsupported medium %q", name, ed.Medium)
	}
	// Only when the permission bits differ: a chmod would also clear the
	// setgid bit an fsGroup set (and a tmpfs root's sticky bit).
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("emptyDir %q: %w", name, err)
	}
	if info.Mode().Perm() != 0o777 {
		return os.Chmod(dir, 0o777)
	}
	return nil
}
