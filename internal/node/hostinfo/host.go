package hostinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Host is the machine hostinfo looks at. LocalHost returns the real one;
// tests build their own over a temporary Root.
type Host struct {
	// Root is the host's root directory; every file is read below it.
	Root string
	// KernelRelease returns what `uname -r` prints.
	KernelRelease func() (string, error)
	// FSCapacity returns the size in bytes of the filesystem holding path.
	FSCapacity func(path string) (int64, error)
	// FSType returns the filesystem magic of path (statfs f_type).
	FSType func(path string) (int64, error)
	// NumCPU is the fallback CPU count when the online CPU list is unreadable.
	NumCPU func() int
}

// LocalHost is the machine the kubelet runs on.
func LocalHost() Host {
	return Host{
		Root:          "/",
		KernelRelease: unameRelease,
		FSCapacity:    statfsCapacity,
		FSType:        statfsType,
		NumCPU:        runtime.NumCPU,
	}
}

// path is p (an absolute host path) below Root.
func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

// firstLine returns the trimmed content of the first readable, non-empty
// file of paths.
func (h Host) firstLine(paths ...string) string {
	for _, p := range paths {
		b, err := os.ReadFile(h.path(p))
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
	}
	return ""
}

func unameRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

// statfsCapacity is the filesystem size as cAdvisor measures it: fragment
// size times blocks.
func statfsCapacity(p string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", p, err)
	}
	return int64(st.Frsize) * int64(st.Blocks), nil
}

func statfsType(p string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", p, err)
	}
	return int64(st.Type), nil
}
