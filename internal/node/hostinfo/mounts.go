package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Mounts reads the mount table of the kubelet's mount namespace,
// /proc/self/mountinfo, with moby/sys/mountinfo (which undoes the kernel's
// octal escapes in paths). filter may be nil.
func (h Host) Mounts(filter mountinfo.FilterFunc) ([]*mountinfo.Info, error) {
	f, err := os.Open(h.path("/proc/self/mountinfo"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mountinfo.GetMountsFromReader(f, filter)
}

// DefaultCgroupRoot is where the cgroup hierarchies are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// Cgroups is the cgroup layout: one unified (v2) hierarchy at Root, or v1
// hierarchies, one per controller or group of co-mounted controllers.
type Cgroups struct {
	// Unified is true on a pure cgroup v2 host (Root is cgroup2).
	Unified bool
	// Root is the cgroup mount root, /sys/fs/cgroup.
	Root string
	// Mounts maps every mounted v1 controller to its hierarchy's mount
	// point; co-mounted controllers ("cpu,cpuacct") share one. Nil on v2.
	Mounts map[string]string
}

// ErrNoCgroups is wrapped when the machine offers no usable cgroups.
var ErrNoCgroups = errors.New("cgroups are not usable")

// Cgroups finds the cgroup layout at root ("/sys/fs/cgroup"): cgroup2 by
// its filesystem type, else the v1 controllers from the mount table.
func (h Host) Cgroups(root string) (Cgroups, error) {
	fsType, err := h.FSType(root)
	if err != nil {
		return Cgroups{}, fmt.Errorf("%w: %v", ErrNoCgroups, err)
	}
	if fsType == unix.CGROUP2_SUPER_MAGIC {
		return Cgroups{Unified: true, Root: root}, nil
	}
	mounts, err := h.Mounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil {
		return Cgroups{}, fmt.Errorf("%w: %v", ErrNoCgroups, err)
	}
	l := Cgroups{Root: root, Mounts: V1Controllers(mounts)}
	if len(l.Mounts) == 0 {
		return Cgroups{}, fmt.Errorf("%w: no cgroup v1 controller is mounted and %s is not cgroup2", ErrNoCgroups, root)
	}
	return l, nil
}

// V1Controllers maps each cgroup v1 controller to its mount point, from
// cgroup mounts' superblock options; named hierarchies (name=systemd) and
// the flags beside the controllers are left out. The first mount of a
// controller wins.
func V1Controllers(mounts []*mountinfo.Info) map[string]string {
	out := map[string]string{}
	for _, m := range mounts {
		if m.FSType != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(m.VFSOptions, ",") {
			switch {
			case opt == "", opt == "rw", opt == "ro", opt == "clone_children", opt == "xattr",
				strings.Contains(opt, "="), strings.HasPrefix(opt, "no"):
				continue
			}
			if _, seen := out[opt]; !seen {
				out[opt] = m.Mountpoint
			}
		}
	}
	return out
}

// SwapControllerAvailable reports whether the memory cgroup controls swap,
// as upstream checks it: on cgroup v1 the memory hierarchy has
// memory.memsw.limit_in_bytes (swap accounting is on); on cgroup v2 the
// kubelet's own cgroup has memory.swap.max (the root cgroup never does).
func (h Host) SwapControllerAvailable(l Cgroups) bool {
	var p string
	if l.Unified {
		self, err := h.ProcessCgroups(os.Getpid())
		if err != nil {
			return false
		}
		p = filepath.Join(l.Root, self[""], "memory.swap.max")
	} else {
		mem, ok := l.Mounts["memory"]
		if !ok {
			return false
		}
		p = filepath.Join(mem, "memory.memsw.limit_in_bytes")
	}
	_, err := os.Stat(h.path(p))
	return err == nil
}
