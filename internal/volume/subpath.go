package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// subPathsDirName holds, per pod, the bind mounts that pin each subPath:
// <pod dir>/volume-subpaths/<volume>/<container>/<volumeMount index>.
const subPathsDirName = "volume-subpaths"

// SubPathTarget is where the subPath of a container's index-th volumeMount
// of volume is bind-mounted before the runtime sees it. Container and
// volume names are DNS labels, safe as path components.
func SubPathTarget(podDir, volume, container string, index int) string {
	return filepath.Join(podDir, subPathsDirName, volume, container, strconv.Itoa(index))
}

// errSubPathMissing: the subPath does not exist and may not be created.
var errSubPathMissing = errors.New("it does not exist in the volume")

// errSubPathCreate: a missing subPath directory could not be created.
var errSubPathCreate = errors.New("cannot create subPath directory")

// subPathRequest is one volumeMount's subPath to expose to the runtime.
type subPathRequest struct {
	// VolumePath is the volume's directory on the host.
	VolumePath string
	// SubPath is relative and free of ".." (ValidateSubPath).
	SubPath string
	// Create makes a missing subPath as a directory with the volume's mode.
	Create bool
	// Target is the bind mount's path (SubPathTarget).
	Target string
}

// bindSubPath resolves the subPath inside the volume, opens what it names
// without following any symlink and without leaving the volume, and
// bind-mounts that open file (/proc/self/fd/N) at Target, so the runtime
// mounts the very inode that was checked: whatever a container sharing the
// volume renames or turns into a symlink afterwards, the container gets the
// checked file or directory, never a path outside the volume (upstream's
// fix for CVE-2021-25741). A Target already bound to the same file is kept.
func bindSubPath(r subPathRequest) (string, error) {
	base, err := filepath.EvalSymlinks(r.VolumePath)
	if err != nil {
		return "", fmt.Errorf("resolve volume path %s: %w", r.VolumePath, err)
	}
	full := filepath.Join(base, r.SubPath)
	if _, err := os.Stat(full); errors.Is(err, fs.ErrNotExist) {
		if !r.Create {
			return "", fmt.Errorf("SubPath `%s`: %w", r.SubPath, errSubPathMissing)
		}
		info, err := os.Stat(base)
		if err != nil {
			return "", fmt.Errorf("stat volume path %s: %w", base, err)
		}
		if err := safeMakeDir(base, r.SubPath, info.Mode()); err != nil {
			return "", fmt.Errorf("%w `%s`: %w", errSubPathCreate, r.SubPath, err)
		}
	}
	// Symlinks inside the volume are allowed (configMap keys are links
	// into ..data) as long as they resolve inside it; the open below then
	// walks the resolved path refusing any symlink, so a swap after this
	// check makes the open fail rather than escape.
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("resolve SubPath `%s`: %w", r.SubPath, err)
	}
	rel, ok := within(base, resolved)
	if !ok {
		return "", fmt.Errorf("subpath %q not within volume path %q", resolved, base)
	}
	root, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open volume path %s: %w", base, err)
	}
	defer unix.Close(root)
	fd, err := openBeneath(root, rel)
	if err != nil {
		return "", fmt.Errorf("open SubPath `%s` inside the volume: %w", r.SubPath, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("stat SubPath `%s`: %w", r.SubPath, err)
	}
	if err := prepareSubPathTarget(r.Target, fd, &st); err != nil {
		return "", err
	}
	if same, err := boundTo(r.Target, &st); err != nil {
		return "", err
	} else if same {
		klog.V(5).InfoS("SubPath already bound", "target", r.Target)
		return r.Target, nil
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, r.Target, "", unix.MS_BIND, ""); err != nil {
		_ = removeSubPathTarget(r.Target)
		return "", fmt.Errorf("bind-mount SubPath `%s` at %s: %w", r.SubPath, r.Target, err)
	}
	klog.V(3).InfoS("Bound subPath", "subPath", r.SubPath, "volumePath", base, "target", r.Target)
	return r.Target, nil
}

// within returns p relative to base when p is base or below it.
func within(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// prepareSubPathTarget makes Target ready for the bind mount of fd: a
// directory for a directory, an empty file for anything else (a bind mount
// over a file takes the type of its source). Something else mounted there
// (the subPath was swapped since) is unmounted first.
func prepareSubPathTarget(target string, fd int, st *unix.Stat_t) error {
	mounted, err := isMounted(target)
	if err != nil {
		return fmt.Errorf("check subPath target %s: %w", target, err)
	}
	if mounted {
		if same, err := boundTo(target, st); err != nil || same {
			return err
		}
		klog.V(2).InfoS("SubPath target is bound to another file; re-binding", "target", target)
		if err := unmountAll(target); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(target), err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	var cur unix.Stat_t
	if err := unix.Lstat(target, &cur); err == nil && (cur.Mode&unix.S_IFMT == unix.S_IFDIR) != isDir {
		// The subPath changed between a file and a directory: the old,
		// unmounted placeholder goes.
		if err := removeSubPathTarget(target); err != nil {
			return err
		}
	}
	if isDir {
		if err := unix.Mkdir(target, 0o750); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create subPath target %s: %w", target, err)
		}
		return nil
	}
	f, err := unix.Open(target, unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o640)
	if err != nil {
		return fmt.Errorf("create subPath target %s: %w", target, err)
	}
	return unix.Close(f)
}

// boundTo reports whether target is a mount of the file st describes.
func boundTo(target string, st *unix.Stat_t) (bool, error) {
	mounted, err := isMounted(target)
	if err != nil || !mounted {
		return false, err
	}
	var t unix.Stat_t
	if err := unix.Stat(target, &t); err != nil {
		return false, fmt.Errorf("stat %s: %w", target, err)
	}
	return t.Dev == st.Dev && t.Ino == st.Ino, nil
}

// removeSubPathTarget removes an unmounted target (an empty directory or
// an empty file); it never removes through a mount.
func removeSubPathTarget(target string) error {
	err := unix.Rmdir(target)
	if errors.Is(err, unix.ENOTDIR) {
		err = unix.Unlink(target)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove subPath target %s: %w", target, err)
	}
	return nil
}

// openat2Missing is set once the kernel answered ENOSYS to openat2
// (before Linux 5.6); openBeneath then walks component by component.
var openat2Missing atomic.Bool

// openBeneath opens rel (relative, cleaned, no "..") below the directory
// root with O_PATH, refusing any symlink on the way and at the end and any
// path that leaves root.
func openBeneath(root int, rel string) (int, error) {
	if !openat2Missing.Load() {
		fd, err := openBeneathOpenat2(root, rel)
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		openat2Missing.Store(true)
		klog.V(2).InfoS("openat2 is not available; opening subPaths component by component")
	}
	return openBeneathWalk(root, rel)
}

// openBeneathOpenat2 lets the kernel enforce the walk: RESOLVE_BENEATH
// keeps it below root, RESOLVE_NO_SYMLINKS refuses every symlink (magic
// links included).
func openBeneathOpenat2(root int, rel string) (int, error) {
	for attempt := 1; ; attempt++ {
		fd, err := unix.Openat2(root, rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
		})
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && attempt < 10 {
			continue // a concurrent rename; try again (a bounded number of times)
		}
		if errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("%s: a symlink is on the way (it was swapped after the check): %w", rel, err)
		}
		if err != nil {
			return -1, err
		}
		// O_PATH|O_NOFOLLOW hands out the trailing symlink itself.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: unexpected symlink (it was swapped after the check)", rel)
		}
		return fd, nil
	}
}

// openBeneathWalk is the fallback: each component opened with
// O_PATH|O_NOFOLLOW relative to the one before, and rejected when it is a
// symlink ("." and ".." are never walked: rel is cleaned and checked).
func openBeneathWalk(root int, rel string) (int, error) {
	fd, err := unix.Openat(root, ".", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("invalid path component %q in %q", part, rel)
		}
		child, err := unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(child, &st); err != nil {
			unix.Close(child)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(child)
			return -1, fmt.Errorf("%s: unexpected symlink at %q (it was swapped after the check)", rel, part)
		}
		fd = child
	}
	return fd, nil
}

// safeMakeDir creates the missing directories of subPath below base one by
// one with mkdirat, each relative to the directory opened before it
// without following symlinks, so that nothing a container plants in the
// volume (CVE-2017-1002101: a symlink to the host's /) can make the kubelet
// create directories outside it. Each new directory gets mode perm, setgid
// and sticky bits included, regardless of the umask (upstream creates it
// with the volume's own mode). An existing part must resolve inside base.
func safeMakeDir(base, subPath string, perm fs.FileMode) error {
	parts := strings.Split(filepath.Clean(subPath), "/")
	existing := base
	i := 0
	for ; i < len(parts); i++ {
		next := filepath.Join(existing, parts[i])
		if _, err := os.Stat(next); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			return err
		}
		existing = next
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return err
	}
	rel, ok := within(base, resolved)
	if !ok {
		return fmt.Errorf("path %s is outside of the volume %s", resolved, base)
	}
	root, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	dir, err := openBeneath(root, rel)
	if err != nil {
		return err
	}
	defer func() { unix.Close(dir) }()
	mode := kernelMode(perm)
	for _, name := range parts[i:] {
		if name == "" || name == "." || name == ".." {
			return fmt.Errorf("invalid path component %q", name)
		}
		if err := unix.Mkdirat(dir, name, mode&0o777); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("mkdir %s: %w", name, err)
		}
		// O_NOFOLLOW: if a container turned what was just made into a
		// symlink, this fails instead of entering it.
		child, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", name, err)
		}
		unix.Close(dir)
		dir = child
		if err := unix.Fchmod(dir, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", name, err)
		}
	}
	return nil
}

// kernelMode translates a Go file mode into chmod(2) bits.
func kernelMode(m fs.FileMode) uint32 {
	out := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		out |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		out |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		out |= unix.S_ISVTX
	}
	return out
}

// cleanSubPaths unmounts every subPath bind mount of the pod at podDir and
// removes <podDir>/volume-subpaths. Nothing is removed while a mount is
// left below it.
func cleanSubPaths(podDir string) error {
	dir := filepath.Join(podDir, subPathsDirName)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ms, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := unix.Unmount(m.Mountpoint, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount subPath %s: %w", m.Mountpoint, err)
		}
		klog.V(4).InfoS("Unmounted subPath", "target", m.Mountpoint)
	}
	return removeAllOneFilesystem(dir)
}

// unmountAll unmounts everything stacked at path.
func unmountAll(path string) error {
	ms, err := mountsAt(path)
	if err != nil {
		return err
	}
	for range ms {
		if err := unix.Unmount(path, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return nil
}
