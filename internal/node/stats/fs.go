package stats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fsInfo is a filesystem's size as statfs reports it.
type fsInfo struct {
	Capacity, Available, Used uint64
	Inodes, InodesFree        uint64
}

// statFS reads the filesystem holding path.
func statFS(path string) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fsInfo{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return fsInfoFromStatfs(uint64(st.Bsize), st.Blocks, st.Bfree, st.Bavail, st.Files, st.Ffree), nil
}

// fsInfoFromStatfs converts statfs counts: used is what is not free (as
// cAdvisor counts it), available what an unprivileged user may still take.
func fsInfoFromStatfs(bsize, blocks, bfree, bavail, files, ffree uint64) fsInfo {
	return fsInfo{
		Capacity:   blocks * bsize,
		Available:  bavail * bsize,
		Used:       (blocks - bfree) * bsize,
		Inodes:     files,
		InodesFree: ffree,
	}
}

// fsStats is the FsStats of a whole filesystem, used included.
func (f fsInfo) fsStats(t time.Time) *statsapi.FsStats {
	s := f.capacityStats(t)
	s.UsedBytes = u64(f.Used)
	if f.Inodes >= f.InodesFree {
		s.InodesUsed = u64(f.Inodes - f.InodesFree)
	}
	return s
}

// capacityStats is the FsStats of the filesystem without usage, the frame
// in which a container's or pod's own usage is reported.
func (f fsInfo) capacityStats(t time.Time) *statsapi.FsStats {
	return &statsapi.FsStats{
		Time:           metav1.NewTime(t),
		AvailableBytes: u64(f.Available),
		CapacityBytes:  u64(f.Capacity),
		Inodes:         u64(f.Inodes),
		InodesFree:     u64(f.InodesFree),
	}
}

// diskUsage is the space and inodes used by what is in a directory.
type diskUsage struct {
	Bytes, Inodes uint64
}

// filesUsage measures the regular files directly in dir (log directories
// hold only files), counting allocated blocks as du does. A missing
// directory is not an error: it reports ok=false.
func filesUsage(dir string) (diskUsage, bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return diskUsage{}, false, nil
	}
	if err != nil {
		return diskUsage{}, false, err
	}
	var u diskUsage
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		fu, ok := fileUsage(filepath.Join(dir, e.Name()))
		if !ok {
			continue // removed (rotated) while we looked
		}
		u.add(fu)
	}
	return u, true, nil
}

// fileUsage measures one file.
func fileUsage(p string) (diskUsage, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return diskUsage{}, false
	}
	return diskUsage{Bytes: uint64(st.Blocks) * 512, Inodes: 1}, true
}

func (u *diskUsage) add(o diskUsage) {
	u.Bytes += o.Bytes
	u.Inodes += o.Inodes
}

// ctime is a path's status change time (a cgroup directory's creation),
// or zero.
func ctime(p string) time.Time {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return time.Time{}
	}
	return time.Unix(st.Ctim.Unix())
}
