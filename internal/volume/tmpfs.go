package volume

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
)

// MemoryBacked reports whether vol lives on a tmpfs, as upstream: Memory
// emptyDirs, and the secret, downwardAPI and projected volumes (service
// account tokens included), whose contents must never reach the node's
// disk. configMap volumes stay on disk, as upstream.
func MemoryBacked(vol *v1.Volume) bool {
	return vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil ||
		(vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumMemory)
}

// IsLocalEphemeral reports whether vol is stored on the node's disk for the
// pod's lifetime and so counts towards the pod's ephemeral storage
// (upstream's IsLocalEphemeralVolume): gitRepo, disk-backed emptyDir and
// configMap. Memory-backed volumes count in memory: the kernel charges
// tmpfs pages to the memory cgroup of whoever writes them.
func IsLocalEphemeral(vol *v1.Volume) bool {
	return vol.GitRepo != nil || vol.ConfigMap != nil ||
		(vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumDefault)
}

// TmpfsSize is the size of a memory-backed volume's tmpfs, as upstream's
// calculateEmptyDirMemorySize: the node's allocatable memory (pods cannot
// use more), lowered to the pod's memory limit (its cgroup's) when that is
// positive and smaller, lowered to the emptyDir's sizeLimit when that is
// positive and smaller. 0 means no size option (the kernel's default, half
// the RAM). It is pure.
func TmpfsSize(allocatable, podLimit int64, sizeLimit *resource.Quantity) int64 {
	size := allocatable
	if podLimit > 0 && (size <= 0 || podLimit <= size) {
		size = podLimit
	}
	if sizeLimit != nil && sizeLimit.Sign() > 0 && (size <= 0 || sizeLimit.Value() <= size) {
		size = sizeLimit.Value()
	}
	if size < 0 {
		return 0
	}
	return size
}

// TmpfsOptions is the tmpfs mount data: size= when known, and noswap where
// the kernel has it (Linux 6.4+), as upstream, so a secret is not written
// to a swap device either. It is pure.
func TmpfsOptions(size int64, noswap bool) string {
	var opts []string
	if size > 0 {
		opts = append(opts, "size="+strconv.FormatInt(size, 10))
	}
	if noswap {
		opts = append(opts, "noswap")
	}
	return strings.Join(opts, ",")
}

// TmpfsNoswapSupported reports whether a kernel release (uname -r) knows
// tmpfs's noswap option: 6.4 and later, upstream's check. It is pure.
func TmpfsNoswapSupported(release string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || (major == 6 && minor >= 4)
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// podMemoryLimit is the memory limit of the pod's cgroup (0: none), the
// figure upstream bounds memory-backed volumes by.
func podMemoryLimit(pod *v1.Pod) int64 {
	rc := cgroups.PodResourceConfig(pod, cgroups.PodOptions{})
	if rc.Memory == nil {
		return 0
	}
	return *rc.Memory
}

// tmpfsSize decides the size of vol's tmpfs for pod.
func (m *Manager) tmpfsSize(pod *v1.Pod, vol *v1.Volume) int64 {
	var alloc int64
	if m.cfg.NodeAllocatable != nil {
		if q, ok := m.cfg.NodeAllocatable()[v1.ResourceMemory]; ok {
			alloc = q.Value()
		}
	}
	var limit *resource.Quantity
	if vol.EmptyDir != nil {
		limit = vol.EmptyDir.SizeLimit
	}
	return TmpfsSize(alloc, podMemoryLimit(pod), limit)
}

// ensureTmpfs mounts a tmpfs of the given size at dir (created 0750 if
// missing) unless one is mounted there already: after a restart the
// existing tmpfs, and what it holds, is reused.
func (m *Manager) ensureTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	mounted, err := isMounted(dir)
	if err != nil {
		return fmt.Errorf("check mount at %s: %w", dir, err)
	}
	if mounted {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", dir, err)
		}
		if st.Type != unix.TMPFS_MAGIC {
			return fmt.Errorf("%s is a mount point but not the tmpfs the kubelet mounts there", dir)
		}
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("mounting a tmpfs at %s needs root", dir)
	}
	opts := TmpfsOptions(size, m.noswap)
	err = unix.Mount("tmpfs", dir, "tmpfs", 0, opts)
	if errors.Is(err, unix.EINVAL) && m.noswap {
		// noswap is refused where the kernel says it should work (e.g. in
		// a user namespace): mount without it, as upstream decides then.
		klog.V(2).InfoS("tmpfs refused noswap; mounting without it", "path", dir)
		opts = TmpfsOptions(size, false)
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, opts)
	}
	if err != nil {
		return fmt.Errorf("mount tmpfs at %s (%s): %w", dir, opts, err)
	}
	klog.V(3).InfoS("Mounted tmpfs", "path", dir, "options", opts)
	return nil
}
