package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// CheckHostPath applies hostPath type semantics to path: the *OrCreate types
// create what is missing, the others require an existing object of the type.
func CheckHostPath(path string, t v1.HostPathType) error {
	info, statErr := os.Stat(path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("hostPath type check failed: stat %s: %w", path, statErr)
	}
	fail := func(what string) error { return fmt.Errorf("hostPath type check failed: %s is not %s", path, what) }
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("hostPath type check failed: create directory %s: %w", path, err)
			}
			return os.Chmod(path, 0o755)
		}
		if !info.IsDir() {
			return fail("a directory")
		}
	case v1.HostPathDirectory:
		if !exists || !info.IsDir() {
			return fail("a directory")
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("hostPath type check failed: create parent of %s: %w", path, err)
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return fmt.Errorf("hostPath type check failed: create file %s: %w", path, err)
			}
			return f.Close()
		}
		if info.IsDir() {
			return fail("a file")
		}
	case v1.HostPathFile:
		if !exists || info.IsDir() {
			return fail("a file")
		}
	case v1.HostPathSocket:
		if !exists || info.Mode()&fs.ModeSocket == 0 {
			return fail("a socket file")
		}
	case v1.HostPathCharDev:
		if !exists || info.Mode()&fs.ModeCharDevice == 0 {
			return fail("a character device")
		}
	case v1.HostPathBlockDev:
		if !exists || info.Mode()&fs.ModeDevice == 0 || info.Mode()&fs.ModeCharDevice != 0 {
			return fail("a block device")
		}
	default:
		return fmt.Errorf("hostPath type check failed: %s: unknown type %q", path, t)
	}
	return nil
}
