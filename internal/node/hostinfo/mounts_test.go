package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

const cgroupMounts = `22 1 0:21 / /sys/fs/cgroup rw - tmpfs tmpfs ro,mode=755
25 22 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
26 22 0:23 / /sys/fs/cgroup/net_cls,net_prio rw - cgroup cgroup rw,net_cls,net_prio
27 22 0:24 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
28 22 0:25 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
29 22 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
30 22 0:27 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,noprefix,clone_children,cpuset
31 1 8:1 / /var/lib/kubelet/pods/x/volumes/a\040b rw - ext4 /dev/sda1 rw
`

func TestMounts(t *testing.T) {
	h := fakeHost(t, map[string]string{"proc/self/mountinfo": cgroupMounts})
	all, err := h.Mounts(nil)
	if err != nil || len(all) != 8 {
		t.Fatalf("mounts = %d, %v", len(all), err)
	}
	if last := all[7].Mountpoint; last != "/var/lib/kubelet/pods/x/volumes/a b" {
		t.Errorf("escaped mount point = %q, want the space undone", last)
	}
}

func TestCgroups(t *testing.T) {
	h := fakeHost(t, map[string]string{"proc/self/mountinfo": cgroupMounts})
	h.FSType = func(string) (int64, error) { return unix.TMPFS_MAGIC, nil }
	got, err := h.Cgroups(DefaultCgroupRoot)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
		"net_cls": "/sys/fs/cgroup/net_cls,net_prio", "net_prio": "/sys/fs/cgroup/net_cls,net_prio",
		"memory": "/sys/fs/cgroup/memory", "cpuset": "/sys/fs/cgroup/cpuset"}
	if got.Unified || got.Root != DefaultCgroupRoot || fmt.Sprint(got.Mounts) != fmt.Sprint(want) {
		t.Errorf("layout = %+v\nwant mounts %v", got, want)
	}

	h.FSType = func(string) (int64, error) { return unix.CGROUP2_SUPER_MAGIC, nil }
	if got, err := h.Cgroups(DefaultCgroupRoot); err != nil || !got.Unified || got.Mounts != nil {
		t.Errorf("cgroup2 layout = %+v, %v", got, err)
	}

	h.FSType = func(string) (int64, error) { return unix.TMPFS_MAGIC, nil }
	h2 := fakeHost(t, map[string]string{"proc/self/mountinfo": "31 1 8:1 / / rw - ext4 /dev/sda1 rw\n"})
	h2.FSType = h.FSType
	if _, err := h2.Cgroups(DefaultCgroupRoot); !errors.Is(err, ErrNoCgroups) {
		t.Errorf("no cgroup mounts: err = %v, want ErrNoCgroups", err)
	}
	h2.FSType = func(string) (int64, error) { return 0, errors.New("no such dir") }
	if _, err := h2.Cgroups(DefaultCgroupRoot); !errors.Is(err, ErrNoCgroups) {
		t.Errorf("unreadable root: err = %v, want ErrNoCgroups", err)
	}
}

// The real machine's layout is readable (the CI machines have cgroups).
func TestLocalCgroups(t *testing.T) {
	l, err := LocalHost().Cgroups(DefaultCgroupRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Unified && l.Mounts["memory"] == "" {
		t.Errorf("v1 layout without a memory controller: %+v", l)
	}
}

func TestSwapControllerAvailable(t *testing.T) {
	self := fmt.Sprintf("proc/%d/cgroup", os.Getpid())
	v1 := Cgroups{Root: "/sys/fs/cgroup", Mounts: map[string]string{"memory": "/sys/fs/cgroup/memory"}}
	v2 := Cgroups{Unified: true, Root: "/sys/fs/cgroup"}
	cases := []struct {
		name   string
		files  map[string]string
		layout Cgroups
		want   bool
	}{
		{"v1 with swap accounting", map[string]string{"sys/fs/cgroup/memory/memory.memsw.limit_in_bytes": "9223372036854771712\n"}, v1, true},
		{"v1 without swap accounting", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, v1, false},
		{"v1 without the memory controller", nil, Cgroups{Root: "/sys/fs/cgroup", Mounts: map[string]string{"cpu": "/sys/fs/cgroup/cpu"}}, false},
		{"v2 with memory.swap.max in the kubelet's cgroup", map[string]string{
			self: "0::/system.slice/kubelet.service\n", "sys/fs/cgroup/system.slice/kubelet.service/memory.swap.max": "max\n"}, v2, true},
		{"v2 root only (never has memory.swap.max)", map[string]string{self: "0::/\n"}, v2, false},
		{"v2 unreadable /proc/self/cgroup", nil, v2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fakeHost(t, tc.files).SwapControllerAvailable(tc.layout); got != tc.want {
				t.Errorf("SwapControllerAvailable = %v, want %v", got, tc.want)
			}
		})
	}
}
