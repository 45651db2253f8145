package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// hostCgroups is the machine's cgroup filesystem with cgroupfs names, as
// the test kubelets use it.
func hostCgroups(t testing.TB) *cgroups.FS {
	t.Helper()
	layout, err := hostinfo.LocalHost().Cgroups(hostinfo.DefaultCgroupRoot)
	if err != nil {
		t.Fatalf("cgroups: %v", err)
	}
	return cgroups.NewFS(layout, cgroups.DriverCgroupfs)
}

// CreateCgroupRoot creates an empty cgroup (a kubelet's cgroupRoot) in every
// hierarchy and removes it, with everything below, when the test ends.
// Every test kubelet gets its own, so concurrent kubelets never see each
// other's pod cgroups (and never remove them as orphans).
func CreateCgroupRoot(t testing.TB, path string) {
	t.Helper()
	fs := hostCgroups(t)
	n := cgroups.ParseCgroupfs(path)
	if err := fs.Create(n, cgroups.ResourceConfig{}); err != nil {
		t.Fatalf("create cgroup root %s: %v", path, err)
	}
	t.Cleanup(func() { RemoveCgroup(t, path) })
}

// RemoveCgroup removes a cgroup and everything below it, killing what still
// runs there, retrying until the kernel lets go of it.
func RemoveCgroup(t testing.TB, path string) {
	fs := hostCgroups(t)
	n := cgroups.ParseCgroupfs(path)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := fs.Destroy(n)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("remove cgroup %s: %v", path, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CgroupFile reads one file of a cgroup in a v1 controller's hierarchy
// (or the v2 tree), trimmed.
func CgroupFile(t testing.TB, controller, path, file string) (string, error) {
	t.Helper()
	fs := hostCgroups(t)
	base := fs.Root
	if fs.Version == cgroups.V1 {
		base = fs.Mounts[controller]
	}
	data, err := os.ReadFile(filepath.Join(base, path, file))
	return strings.TrimSpace(string(data)), err
}

// CgroupExists reports whether the cgroup exists in the memory hierarchy
// (the v2 tree).
func CgroupExists(t testing.TB, path string) bool {
	t.Helper()
	fs := hostCgroups(t)
	base := fs.Root
	if fs.Version == cgroups.V1 {
		base = fs.Mounts["memory"]
	}
	_, err := os.Stat(filepath.Join(base, path))
	return err == nil
}
