package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Permission bits a pod's fsGroup adds to the volumes it owns, as upstream:
// group read (and write, for writable volumes) on everything, group
// search plus setgid on directories so new files inherit the group.
const (
	groupRW   fs.FileMode = 0o660
	groupRO   fs.FileMode = 0o440
	groupExec fs.FileMode = 0o110
)

// FSGroup returns the pod's fsGroup and change policy (nil when unset).
func FSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	if psc := pod.Spec.SecurityContext; psc != nil && psc.FSGroup != nil {
		return psc.FSGroup, psc.FSGroupChangePolicy
	}
	return nil, nil
}

// fileModeFor is the mode a file of a read-only (atomic writer) volume
// gets when the pod has an fsGroup: its own mode plus group read. It is pure.
func fileModeFor(mode int32, fsGroup *int64) int32 {
	if fsGroup == nil {
		return mode
	}
	return mode | int32(groupRO)
}

// ownershipMode is the mode an entry with mode cur gets: group rw (or r),
// plus setgid and group search on directories. It is pure.
func ownershipMode(cur fs.FileMode, readOnly bool) fs.FileMode {
	mask := groupRW
	if readOnly {
		mask = groupRO
	}
	if cur.IsDir() {
		mask |= os.ModeSetgid | groupExec
	}
	return cur.Perm() | cur&(os.ModeSetgid|os.ModeSetuid|os.ModeSticky) | mask
}

// rootMatches reports whether the volume's root already has the fsGroup,
// the setgid bit and the group permissions (fsGroupChangePolicy
// OnRootMismatch then skips the walk).
func rootMatches(dir string, gid int64, readOnly bool) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid {
		return false
	}
	if info.IsDir() && info.Mode()&os.ModeSetgid == 0 {
		return false
	}
	want := groupRW
	if readOnly {
		want = groupRO
	}
	return info.Mode().Perm()&want == want
}

// setOwnership gives everything under dir to group gid with the group
// permissions above (symlinks are re-grouped, never chmod-ed: that would
// change their targets). With policy OnRootMismatch a root that already
// matches is left alone. Errors on single entries are logged, as upstream.
func setOwnership(dir string, gid *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if gid == nil {
		return nil
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && rootMatches(dir, *gid, readOnly) {
		klog.V(4).InfoS("Skipping volume ownership change: root already matches", "path", dir, "fsGroup", *gid)
		return nil
	}
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(*gid)); err != nil {
			klog.ErrorS(err, "Cannot change the group of a volume entry", "path", p, "fsGroup", *gid)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		if err := os.Chmod(p, ownershipMode(info.Mode(), readOnly)); err != nil {
			klog.ErrorS(err, "Cannot change the mode of a volume entry", "path", p)
		}
		return nil
	})
}
