package mountpoint

import (
	"path/filepath"

	"github.com/moby/sys/mountinfo"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// IsMountPoint reports whether path is a mount point: it is listed in this
// mount namespace's mount table (a bind mount of a directory on the same
// filesystem included, which stat cannot tell). A path not in the table,
// missing or not, is not a mount point.
func IsMountPoint(path string) (bool, error) {
	ms, err := hostinfo.LocalHost().Mounts(mountinfo.SingleEntryFilter(filepath.Clean(path)))
	if err != nil {
		return false, err
	}
	return len(ms) > 0, nil
}
