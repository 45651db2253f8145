package cgroups

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	libcontainercgroups "github.com/opencontainers/cgroups"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// The unit names and parents upstream's libctCgroupConfig gives
// libcontainer (ToSystemd of the name, then path.Split).
func TestLibcontainerCgroupNames(t *testing.T) {
	tests := []struct {
		n            Name
		name, parent string
	}{
		{Name{"kubepods"}, "kubepods.slice", "-.slice"},
		{Name{"kubepods", "burstable"}, "kubepods-burstable.slice", "kubepods.slice"},
		{Name{"kubepods", "besteffort"}, "kubepods-besteffort.slice", "kubepods.slice"},
		{Name{"kubepods", "pod0a1b2c3d-4e5f-6789-abcd-ef0123456789"}, "kubepods-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice", "kubepods.slice"},
		{Name{"kubepods", "burstable", "pod1234-5678"}, "kubepods-burstable-pod1234_5678.slice", "kubepods-burstable.slice"},
		{Name{"kubepods", "besteffort", "podab-cd"}, "kubepods-besteffort-podab_cd.slice", "kubepods-besteffort.slice"},
		// A cgroupRoot of "/seed-a": its dashes escaped as well.
		{Name{"seed-a", "kubepods", "burstable"}, "seed_a-kubepods-burstable.slice", "seed_a-kubepods.slice"},
		{Name{"system"}, "system.slice", "-.slice"},
	}
	for _, tc := range tests {
		cg := LibcontainerCgroup(tc.n, nil, false)
		if cg.Name != tc.name || cg.Parent != tc.parent || !cg.Systemd {
			t.Errorf("%v: Name %q Parent %q Systemd %v; want %q in %q", tc.n, cg.Name, cg.Parent, cg.Systemd, tc.name, tc.parent)
		}
	}
}

// toResources' values: v1 shares, v2 weight through getCPUWeight, quota
// and period, memory, pids; devices and freezer always skipped.
func TestLibcontainerResources(t *testing.T) {
	rc := ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(25000), CPUPeriod: u64(100000), Memory: i64(64 << 20), PidsLimit: i64(100)}
	for _, tc := range []struct {
		v2   bool
		want libcontainercgroups.Resources
	}{
		{false, libcontainercgroups.Resources{CpuShares: 1024, CpuQuota: 25000, CpuPeriod: 100000, Memory: 64 << 20, PidsLimit: i64(100), SkipDevices: true, SkipFreezeOnSet: true}},
		{true, libcontainercgroups.Resources{CpuWeight: 39, CpuQuota: 25000, CpuPeriod: 100000, Memory: 64 << 20, PidsLimit: i64(100), SkipDevices: true, SkipFreezeOnSet: true}},
	} {
		got := LibcontainerCgroup(Name{"kubepods", "podx"}, &rc, tc.v2).Resources
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("v2=%v: %+v\nwant %+v", tc.v2, *got, tc.want)
		}
	}
	if r := LibcontainerCgroup(Name{"kubepods"}, &ResourceConfig{}, false).Resources; r.CpuShares != 0 || r.Memory != 0 || r.PidsLimit != nil || r.CpuQuota != 0 {
		t.Errorf("unset fields set: %+v", *r)
	}
}

// Upstream's getCPUWeight and its test values (container_manager_linux_test.go).
func TestCPUWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{2: 1, 1024: 39, 262143: 9999, 262144: 10000, 262145: 10000, 102: 4} {
		if got := CPUWeight(shares); got != want {
			t.Errorf("CPUWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

// fakeSystemd records the unit calls a Manager makes and acts on the
// filesystem as systemd plus libcontainer would.
type fakeSystemd struct {
	fs    *FS
	mu    sync.Mutex
	calls []string
}

func (f *fakeSystemd) record(verb string, n Name, rc *ResourceConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := verb + " " + LibcontainerCgroup(n, nil, false).Name
	if rc != nil {
		s += " " + dump(*rc)
	}
	f.calls = append(f.calls, s)
}

func (f *fakeSystemd) Create(n Name, rc ResourceConfig) error {
	f.record("create", n, &rc)
	return f.fs.CreateFiles(n, rc)
}

func (f *fakeSystemd) Update(n Name, rc ResourceConfig) error {
	f.record("update", n, &rc)
	return f.fs.UpdateFiles(n, rc)
}

func (f *fakeSystemd) Destroy(n Name) error {
	f.record("destroy", n, nil)
	return f.fs.DestroyFiles(n)
}

func (f *fakeSystemd) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

// With the systemd driver every cgroup the Manager creates, resizes or
// removes goes through systemd (a unit call per slice), never mkdir alone.
func TestManagerSystemdGoesThroughUnits(t *testing.T) {
	fs, dir := fakeV1(t, DriverSystemd, "/")
	units := &fakeSystemd{fs: fs}
	fs.Systemd = units
	m, _ := newTestManager(t, fs, "/")
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	got := units.take()
	for i, want := range []string{"create kubepods.slice", "update kubepods.slice", "create kubepods-burstable.slice", "create kubepods-besteffort.slice"} {
		if i >= len(got) || !strings.HasPrefix(got[i], want+" ") {
			t.Fatalf("start: unit calls %q, want %q first", got, want)
		}
	}
	pod := podWith(ctr(rl("cpu", "100m"), nil))
	pod.UID = "ab-cd"
	if _, err := m.EnsurePod(pod); err != nil {
		t.Fatal(err)
	}
	if got := units.take(); len(got) != 1 || !strings.HasPrefix(got[0], "create kubepods-burstable-podab_cd.slice cpu.shares=102") {
		t.Errorf("EnsurePod: unit calls %q", got)
	}
	m.UpdateQOS(nil)
	if got := units.take(); len(got) != 2 || !strings.HasPrefix(got[0], "update kubepods-burstable.slice") || !strings.HasPrefix(got[1], "update kubepods-besteffort.slice") {
		t.Errorf("UpdateQOS: unit calls %q", got)
	}
	if err := m.RemovePod("ab-cd"); err != nil {
		t.Fatal(err)
	}
	// Only the class whose slice exists is stopped.
	if got := units.take(); len(got) != 1 || got[0] != "destroy kubepods-burstable-podab_cd.slice" {
		t.Errorf("RemovePod: unit calls %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu", "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-podab_cd.slice")); !os.IsNotExist(err) {
		t.Errorf("pod slice left behind: %v", err)
	}
}

func TestNewFSSystemdBackend(t *testing.T) {
	layout := hostinfo.Cgroups{Root: "/sys/fs/cgroup", Mounts: map[string]string{"cpu": "/sys/fs/cgroup/cpu"}}
	if NewFS(layout, DriverSystemd).Systemd == nil {
		t.Error("systemd driver without a systemd backend")
	}
	if NewFS(layout, DriverCgroupfs).Systemd != nil {
		t.Error("cgroupfs driver with a systemd backend")
	}
}
