package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/moby/sys/mountinfo"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// The mount table is read here and nowhere else in this package, through
// hostinfo (github.com/moby/sys/mountinfo, which handles mountinfo's
// escapes); Mounted also detects bind mounts of the same filesystem, which
// st_dev cannot.

// realDir resolves dir's symlinks so that it compares with the mount
// points the kernel reports; a missing dir is returned as it is.
func realDir(dir string) (string, error) {
	r, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return filepath.Clean(dir), nil
	}
	if err != nil {
		return "", err
	}
	return r, nil
}

// mountsBelow returns the mounts whose mount point is dir or below it,
// deepest first (the order to unmount them in).
func mountsBelow(dir string) ([]*mountinfo.Info, error) {
	r, err := realDir(dir)
	if err != nil {
		return nil, err
	}
	ms, err := hostinfo.LocalHost().Mounts(mountinfo.PrefixFilter(r))
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	// Later mounts stack on earlier ones at the same point: unmount the
	// last first.
	sort.SliceStable(ms, func(i, j int) bool {
		if len(ms[i].Mountpoint) != len(ms[j].Mountpoint) {
			return len(ms[i].Mountpoint) > len(ms[j].Mountpoint)
		}
		return ms[i].ID > ms[j].ID
	})
	return ms, nil
}

// mountsAt returns the mounts stacked exactly at path, topmost first.
func mountsAt(path string) ([]*mountinfo.Info, error) {
	r, err := realDir(path)
	if err != nil {
		return nil, err
	}
	ms, err := hostinfo.LocalHost().Mounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != r, false })
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID > ms[j].ID })
	return ms, nil
}

// isMounted reports whether something is mounted at path; a missing path
// is not mounted.
func isMounted(path string) (bool, error) {
	ok, err := mountinfo.Mounted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return ok, err
}
