package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// requiredV1 are the v1 controllers the kubelet needs for pod cgroups; the
// cgroup root must exist in each of them.
var requiredV1 = []string{"cpu", "cpuacct", "cpuset", "memory", "pids"}

// v2Controllers are the v2 controllers delegated down to pod cgroups.
var v2Controllers = []string{"cpu", "cpuset", "memory", "pids", "hugetlb", "io"}

// FS reads and writes cgroups on a cgroup filesystem, as one driver spells
// their names. It is the only code that writes cgroup files.
type FS struct {
	Version Version
	Driver  Driver
	// Root is the v2 mount point (v1: unused).
	Root string
	// Mounts maps every mounted v1 controller to its hierarchy's mount
	// point; co-mounted controllers ("cpu,cpuacct") share one.
	Mounts map[string]string
	// Systemd creates, updates and removes cgroups when Driver is
	// systemd (NewFS sets it): systemd must know the slices. Reading and
	// listing stay here.
	Systemd SystemdCgroups
	// rmdir removes one empty cgroup directory; nil means rmdir(2). Tests
	// on plain directories replace it.
	rmdir func(string) error
}

// NewFS is the cgroup filesystem of a layout (hostinfo.Cgroups), with
// names spelled as driver spells them.
func NewFS(layout hostinfo.Cgroups, driver Driver) *FS {
	f := &FS{Version: V1, Driver: driver, Root: layout.Root, Mounts: layout.Mounts}
	if layout.Unified {
		f = &FS{Version: V2, Driver: driver, Root: layout.Root}
	}
	if driver == DriverSystemd {
		f.Systemd = NewSystemdCgroups(f.Version)
	}
	return f
}

// dirs are n's directories: one per distinct v1 hierarchy, or the one v2 dir.
func (f *FS) dirs(n Name) []string {
	p := f.Driver.Path(n)
	if f.Version == V2 {
		return []string{filepath.Join(f.Root, p)}
	}
	seen := map[string]bool{}
	var out []string
	for _, mp := range f.Mounts {
		if !seen[mp] {
			seen[mp] = true
			out = append(out, filepath.Join(mp, p))
		}
	}
	sort.Strings(out)
	return out
}

// controllerDir is n's directory for one controller.
func (f *FS) controllerDir(controller string, n Name) (string, bool) {
	p := f.Driver.Path(n)
	if f.Version == V2 {
		return filepath.Join(f.Root, p), true
	}
	mp, ok := f.Mounts[controller]
	if !ok {
		return "", false
	}
	return filepath.Join(mp, p), true
}

// Missing lists the directories of n that do not exist in the controllers
// the kubelet needs (every v1 one of requiredV1 that is mounted).
func (f *FS) Missing(n Name) []string {
	var missing []string
	check := func(dir string) {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			missing = append(missing, dir)
		}
	}
	if f.Version == V2 {
		check(filepath.Join(f.Root, f.Driver.Path(n)))
		return missing
	}
	for _, c := range requiredV1 {
		if dir, ok := f.controllerDir(c, n); ok {
			check(dir)
		} else {
			missing = append(missing, c+" controller (not mounted)")
		}
	}
	return missing
}

// Exists reports whether n exists in every required controller.
func (f *FS) Exists(n Name) bool { return len(f.Missing(n)) == 0 }

// Create makes n (and missing parents) in every hierarchy and writes rc;
// with the systemd driver systemd creates it (Systemd).
func (f *FS) Create(n Name, rc ResourceConfig) error {
	if f.Systemd != nil {
		return f.Systemd.Create(n, rc)
	}
	return f.CreateFiles(n, rc)
}

// CreateFiles is Create on the filesystem alone, what the cgroupfs driver
// does (and what a systemd stand-in in tests does for its units).
func (f *FS) CreateFiles(n Name, rc ResourceConfig) error {
	if f.Version == V2 {
		if err := f.delegateV2(n); err != nil {
			return err
		}
	}
	for _, dir := range f.dirs(n) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	if f.Version == V1 {
		f.initCpuset(n)
	}
	return f.UpdateFiles(n, rc)
}

// delegateV2 enables the controllers on the path from the root down to n's
// parent, so n gets their interface files.
func (f *FS) delegateV2(n Name) error {
	avail, err := os.ReadFile(filepath.Join(f.Root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(f.Root, "cgroup.controllers"), err)
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(avail)) {
		have[c] = true
	}
	var enable []string
	for _, c := range v2Controllers {
		if have[c] {
			enable = append(enable, "+"+c)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	for i := 0; i < len(n); i++ {
		dir := filepath.Join(f.Root, f.Driver.Path(n[:i]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
			return fmt.Errorf("delegate controllers in %s: %w", dir, err)
		}
	}
	return nil
}

// initCpuset gives new v1 cpuset cgroups their parent's CPUs and memory
// nodes: an empty cpuset cgroup cannot hold tasks.
func (f *FS) initCpuset(n Name) {
	for i := 1; i <= len(n); i++ {
		dir, ok := f.controllerDir("cpuset", n[:i])
		if !ok {
			return
		}
		parent := filepath.Dir(dir)
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			cur, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || strings.TrimSpace(string(cur)) != "" {
				continue
			}
			if val, err := os.ReadFile(filepath.Join(parent, file)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, file), val, 0o644); err != nil {
					klog.V(2).InfoS("Cannot initialise cpuset cgroup", "path", dir, "file", file, "err", err)
				}
			}
		}
	}
}

// Update writes rc into n's files; with the systemd driver through its
// unit (Systemd).
func (f *FS) Update(n Name, rc ResourceConfig) error {
	if f.Systemd != nil {
		return f.Systemd.Update(n, rc)
	}
	return f.UpdateFiles(n, rc)
}

// UpdateFiles is Update on the filesystem alone.
func (f *FS) UpdateFiles(n Name, rc ResourceConfig) error {
	for _, w := range Files(f.Version, rc) {
		dir, ok := f.controllerDir(w.Controller, n)
		if !ok {
			continue // controller not mounted: nothing to enforce it with
		}
		if err := os.WriteFile(filepath.Join(dir, w.File), []byte(w.Value), 0o644); err != nil {
			return fmt.Errorf("set %s=%s on cgroup %s: %w", w.File, w.Value, f.Driver.Path(n), err)
		}
	}
	return nil
}

// Read reads n's values back (what Files would write), for checks and tests.
func (f *FS) Read(n Name) (ResourceConfig, error) {
	files := map[string]string{}
	for _, w := range Files(f.Version, fullConfig()) {
		dir, ok := f.controllerDir(w.Controller, n)
		if !ok {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(dir, w.File)); err == nil {
			files[w.File] = string(data)
		}
	}
	return ReadConfig(f.Version, files)
}

// MemoryUsage is n's memory usage in bytes (memory.usage_in_bytes, or
// memory.current on v2).
func (f *FS) MemoryUsage(n Name) (uint64, error) {
	dir, ok := f.controllerDir("memory", n)
	if !ok {
		return 0, fmt.Errorf("memory controller not mounted")
	}
	file := "memory.usage_in_bytes"
	if f.Version == V2 {
		file = "memory.current"
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
}

func fullConfig() ResourceConfig {
	var u uint64
	var i int64
	return ResourceConfig{CPUShares: &u, CPUQuota: &i, CPUPeriod: &u, Memory: &i, PidsLimit: &i}
}

// Children lists the names of n's direct child cgroups (directory base
// names as the driver spells them), from the memory hierarchy on v1.
func (f *FS) Children(n Name) ([]string, error) {
	dir, ok := f.controllerDir("memory", n)
	if !ok {
		dirs := f.dirs(n)
		if len(dirs) == 0 {
			return nil, nil
		}
		dir = dirs[0]
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Destroy removes n and every cgroup below it from every hierarchy. Tasks
// still inside are killed and an error is returned: the caller tries again
// later (the kernel frees the cgroup only once they are gone). With the
// systemd driver its unit is stopped (Systemd); a cgroup with no directory
// left is not asked for.
func (f *FS) Destroy(n Name) error {
	if f.Systemd != nil {
		if !f.anyExists(n) {
			return nil
		}
		return f.Systemd.Destroy(n)
	}
	return f.DestroyFiles(n)
}

func (f *FS) anyExists(n Name) bool {
	for _, dir := range f.dirs(n) {
		if _, err := os.Stat(dir); err == nil {
			return true
		}
	}
	return false
}

// DestroyFiles is Destroy on the filesystem alone.
func (f *FS) DestroyFiles(n Name) error {
	var errs []error
	rmdir := f.rmdir
	if rmdir == nil {
		rmdir = unix.Rmdir
	}
	for _, dir := range f.dirs(n) {
		if err := removeTree(dir, rmdir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeTree removes a cgroup directory bottom-up.
func removeTree(dir string, rmdir func(string) error) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name()), rmdir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	err = rmdir(dir)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.EBUSY) {
		if n := killTasks(dir); n > 0 {
			return fmt.Errorf("remove cgroup %s: killed %d remaining processes, will retry: %w", dir, n, err)
		}
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// killTasks SIGKILLs the processes of one cgroup and returns how many.
func killTasks(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}
