package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"time"
)

type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

func (r *fakeRecorder) has(prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// fakeV1 lays out a v1 hierarchy of plain directories with root already
// created in every controller.
func fakeV1(t *testing.T, driver Driver, root string) (*FS, string) {
	dir := t.TempDir()
	fs := &FS{Version: V1, Driver: driver, Mounts: map[string]string{}, rmdir: os.RemoveAll}
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer"} {
		fs.Mounts[c] = filepath.Join(dir, c)
		if err := os.MkdirAll(filepath.Join(dir, c, driver.Path(ParseCgroupfs(root))), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "cpuset", "cpuset.cpus"), []byte("0-1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cpuset", "cpuset.mems"), []byte("0\n"), 0o644)
	return fs, dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return strings.TrimSpace(string(data))
}

func newTestManager(t *testing.T, fs *FS, root string) (*Manager, *fakeRecorder) {
	rec := &fakeRecorder{}
	m, err := New(Config{
		FS: fs, CgroupsPerQOS: true, CgroupRoot: root, NodeName: "n1",
		Pod:            PodOptions{EnforceCPULimits: true, CPUPeriod: 100000, PodPidsLimit: 128},
		Capacity:       rl("cpu", "2", "memory", "4Gi", "pid", "4096"),
		SystemReserved: rl("memory", "512Mi"), KubeReserved: rl("cpu", "500m", "pid", "96"),
		EnforceNodeAllocatable: []string{"pods"},
		Recorder:               rec, Clock: clocktesting.NewFakeClock(time.Unix(0, 0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, rec
}

func TestManagerCgroupfsV1(t *testing.T) {
	fs, dir := fakeV1(t, DriverCgroupfs, "/seed-test")
	guaranteed := podWith(ctr(rl("cpu", "250m", "memory", "50Mi"), rl("cpu", "250m", "memory", "50Mi")))
	guaranteed.UID = "g-1"
	burstable := podWith(ctr(rl("cpu", "300m"), nil))
	burstable.UID = "b-1"
	bestEffort := podWith(ctr(nil, nil))
	bestEffort.UID = "e-1"
	active := []*v1.Pod{guaranteed, burstable, bestEffort}
	m, rec := newTestManager(t, fs, "/seed-test")

	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	kp := filepath.Join(dir, "%s", "seed-test", "kubepods")
	at := func(c, rest string) string { return filepath.Join(fmt.Sprintf(kp, c), rest) }
	if got := read(t, at("memory", "memory.limit_in_bytes")); got != fmt.Sprint((4<<30)-(512<<20)) {
		t.Errorf("kubepods memory = %s", got)
	}
	if got := read(t, at("cpu", "cpu.shares")); got != "1536" {
		t.Errorf("kubepods shares = %s", got)
	}
	if got := read(t, at("pids", "pids.max")); got != "4000" {
		t.Errorf("kubepods pids = %s", got)
	}
	if got := read(t, at("cpu", "burstable/cpu.shares")); got != "2" {
		t.Errorf("burstable shares before any pod = %s, want the minimum", got)
	}
	// The sync loop hands over the active pods as it admits them.
	m.UpdateQOS(active)
	if got := read(t, at("cpu", "burstable/cpu.shares")); got != "307" {
		t.Errorf("burstable shares = %s", got)
	}
	if got := read(t, at("cpu", "besteffort/cpu.shares")); got != "2" {
		t.Errorf("besteffort shares = %s", got)
	}
	if !rec.has("Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods") {
		t.Errorf("events %v", rec.events)
	}

	for _, tc := range []struct {
		pod    *v1.Pod
		parent string
	}{
		{guaranteed, "/seed-test/kubepods/podg-1"},
		{burstable, "/seed-test/kubepods/burstable/podb-1"},
		{bestEffort, "/seed-test/kubepods/besteffort/pode-1"},
	} {
		parent, err := m.EnsurePod(tc.pod)
		if err != nil || parent != tc.parent {
			t.Fatalf("EnsurePod = %q, %v; want %q", parent, err, tc.parent)
		}
	}
	if got := read(t, at("memory", "podg-1/memory.limit_in_bytes")); got != fmt.Sprint(50<<20) {
		t.Errorf("guaranteed memory = %s", got)
	}
	if got := read(t, at("cpu", "podg-1/cpu.cfs_quota_us")); got != "25000" {
		t.Errorf("guaranteed quota = %s", got)
	}
	if got := read(t, at("pids", "besteffort/pode-1/pids.max")); got != "128" {
		t.Errorf("pod pids = %s", got)
	}
	if _, err := os.Stat(at("memory", "besteffort/pode-1/memory.limit_in_bytes")); err == nil {
		t.Error("besteffort pod got a memory limit")
	}

	got, err := m.PodCgroups()
	if err != nil || len(got) != 3 {
		t.Fatalf("PodCgroups = %v, %v", got, err)
	}
	// b-1 is gone from the kubelet and the runtime: its cgroup goes; the
	// others stay.
	m.Housekeeping(map[types.UID]bool{"g-1": true, "e-1": true})
	if _, err := os.Stat(at("memory", "burstable/podb-1")); !os.IsNotExist(err) {
		t.Errorf("orphaned pod cgroup still there: %v", err)
	}
	if _, err := os.Stat(at("memory", "podg-1")); err != nil {
		t.Errorf("kept pod cgroup removed: %v", err)
	}
	if err := m.RemovePod("g-1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cpu", "memory", "pids", "freezer"} {
		if _, err := os.Stat(at(c, "podg-1")); !os.IsNotExist(err) {
			t.Errorf("%s: removed pod cgroup still there", c)
		}
	}
}

func TestManagerSystemdNames(t *testing.T) {
	fs, dir := fakeV1(t, DriverSystemd, "/")
	m, _ := newTestManager(t, fs, "/")
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	pod := podWith(ctr(rl("cpu", "100m"), nil))
	pod.UID = "ab-cd"
	parent, err := m.EnsurePod(pod)
	want := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab_cd.slice"
	if err != nil || parent != want {
		t.Fatalf("EnsurePod = %q, %v; want %q", parent, err, want)
	}
	if got := read(t, filepath.Join(dir, "cpu", want, "cpu.shares")); got != "102" {
		t.Errorf("shares = %s", got)
	}
	cgroups, err := m.PodCgroups()
	if err != nil || cgroups["ab-cd"] == nil {
		t.Fatalf("PodCgroups = %v, %v", cgroups, err)
	}
	m.Housekeeping(nil)
	if _, err := os.Stat(filepath.Join(dir, "memory", want)); !os.IsNotExist(err) {
		t.Errorf("orphan not removed: %v", err)
	}
}

func TestManagerMissingRootFails(t *testing.T) {
	fs, _ := fakeV1(t, DriverCgroupfs, "/")
	m, _ := newTestManager(t, fs, "/does-not-exist")
	err := m.Start()
	if err == nil || !strings.Contains(err.Error(), `cgroupRoot "/does-not-exist" does not exist`) {
		t.Fatalf("Start = %v", err)
	}
}

func TestManagerReservedCgroups(t *testing.T) {
	fs, dir := fakeV1(t, DriverCgroupfs, "/system.slice")
	rec := &fakeRecorder{}
	m, err := New(Config{
		FS: fs, CgroupsPerQOS: true, CgroupRoot: "/system.slice", NodeName: "n1",
		Capacity: rl("cpu", "2", "memory", "4Gi"), SystemReserved: rl("cpu", "1", "memory", "1Gi"),
		EnforceNodeAllocatable: []string{"pods", "system-reserved", "kube-reserved-compressible"},
		SystemReservedCgroup:   "/system.slice", KubeReservedCgroup: "/kube.slice",
		Recorder: rec, Clock: clocktesting.NewFakeClock(time.Unix(0, 0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Start()
	if got := read(t, filepath.Join(dir, "memory", "system.slice", "memory.limit_in_bytes")); got != fmt.Sprint(1<<30) {
		t.Errorf("system reserved memory = %s", got)
	}
	if err == nil || !strings.Contains(err.Error(), `Failed to enforce Kube Reserved Cgroup Limits on "/kube.slice"`) {
		t.Fatalf("missing kube reserved cgroup: Start = %v", err)
	}
	if !rec.has("Warning FailedNodeAllocatableEnforcement") || !rec.has("Normal NodeAllocatableEnforced Updated limits on system reserved cgroup /system.slice") {
		t.Errorf("events %v", rec.events)
	}
}

func TestManagerWithoutCgroupsPerQOS(t *testing.T) {
	m, err := New(Config{CgroupRoot: "", Recorder: &fakeRecorder{}, Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if parent, err := m.EnsurePod(podWith(ctr(nil, nil))); parent != "" || err != nil {
		t.Errorf("EnsurePod = %q, %v", parent, err)
	}
	m.Housekeeping(nil)
}

func TestFSV2CreatesAndDelegates(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)
	fs := &FS{Version: V2, Driver: DriverSystemd, Root: dir, rmdir: os.RemoveAll}
	n := Name{"kubepods", "burstable", "pod1"}
	rc := ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(1 << 20), PidsLimit: i64(-1)}
	if err := fs.Create(n, rc); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "cgroup.subtree_control")); got != "+cpu +cpuset +memory +pids +io" {
		t.Errorf("root subtree_control = %q", got)
	}
	if got := read(t, filepath.Join(dir, "kubepods.slice", "kubepods-burstable.slice", "cgroup.subtree_control")); got == "" {
		t.Error("parent does not delegate")
	}
	leaf := filepath.Join(dir, n.Systemd())
	for file, want := range map[string]string{"cpu.weight": "100", "cpu.max": "20000 100000", "memory.max": "1048576", "pids.max": "max"} {
		if got := read(t, filepath.Join(leaf, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	back, err := fs.Read(n)
	if err != nil || *back.CPUQuota != 20000 || *back.Memory != 1<<20 || SharesToWeight(*back.CPUShares) != 100 {
		t.Errorf("Read = %s, %v", dump(back), err)
	}
}
