package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

const kib = 1 << 10

// writeFull writes n non-zero bytes, so every block is allocated.
func writeFull(t *testing.T, p string, n int) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = 'x'
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDirUsage(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFull(t, filepath.Join(root, "a"), 256*kib)
	writeFull(t, filepath.Join(root, "sub", "b"), 512*kib)
	writeFull(t, filepath.Join(root, "sub", "deeper", "c"), 1024*kib)
	// A hard link to c is the same blocks: counted once.
	if err := os.Link(filepath.Join(root, "sub", "deeper", "c"), filepath.Join(root, "c-again")); err != nil {
		t.Fatal(err)
	}
	// A symlink is one inode of its own, not what it points to.
	if err := os.Symlink("sub/b", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	// A sparse file counts the blocks it holds, not its apparent size.
	f, err := os.Create(filepath.Join(root, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()

	u, err := dirUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	// root, sub, deeper, a, b, c, link, sparse.
	if u.Inodes != 8 {
		t.Errorf("inodes = %d, want 8", u.Inodes)
	}
	data := uint64(256+512+1024) * kib
	// Above the data: directories and the symlink take a few blocks each,
	// at most 64KiB apiece on any filesystem these tests run on.
	if u.Bytes < data || u.Bytes > data+5*64*kib {
		t.Errorf("bytes = %d, want %d plus a few blocks (hard link once, sparse file empty)", u.Bytes, data)
	}

	if _, err := dirUsage(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: err = %v, want not exist", err)
	}
	one, err := dirUsage(filepath.Join(root, "a"))
	if err != nil || one.Inodes != 1 || one.Bytes < 256*kib {
		t.Errorf("a single file: %+v, %v", one, err)
	}
}

func TestReportedVolumes(t *testing.T) {
	pod := &v1.Pod{}
	pod.UID = types.UID("uid1")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp"}}},
	}
	got := reportedVolumes(pod, "/r/pods")
	want := []podVolume{
		{Name: "scratch", Path: "/r/pods/uid1/volumes/kubernetes.io~empty-dir/scratch", Local: true},
		{Name: "ram", Path: "/r/pods/uid1/volumes/kubernetes.io~empty-dir/ram"},
		{Name: "cm", Path: "/r/pods/uid1/volumes/kubernetes.io~configmap/cm", Local: true},
		{Name: "sec", Path: "/r/pods/uid1/volumes/kubernetes.io~secret/sec"},
		{Name: "info", Path: "/r/pods/uid1/volumes/kubernetes.io~downward-api/info"},
		{Name: "proj", Path: "/r/pods/uid1/volumes/kubernetes.io~projected/proj"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// fakeMeasure answers measurements from a table and counts them.
type fakeMeasure struct {
	calls map[string]int
	usage map[string]uint64
	err   map[string]error
}

func (f *fakeMeasure) measure(path string) (volumeSample, error) {
	f.calls[path]++
	if err := f.err[path]; err != nil {
		return volumeSample{}, err
	}
	return volumeSample{Usage: diskUsage{Bytes: f.usage[path], Inodes: 1}, Fs: fsInfo{Capacity: 1000}}, nil
}

func TestVolumeCacheRefresh(t *testing.T) {
	t0 := time.Unix(10000, 0)
	clk := clocktesting.NewFakeClock(t0)
	fm := &fakeMeasure{calls: map[string]int{}, usage: map[string]uint64{"/v": 100}, err: map[string]error{}}
	var deferred []func()
	sync := true
	c := newVolumeCache(volumeCacheConfig{
		Clock: clk, Period: time.Minute,
		Jitter:  func(d time.Duration) time.Duration { return d / 6 }, // 10s
		Measure: fm.measure,
		Spawn: func(f func()) {
			if sync {
				f()
			} else {
				deferred = append(deferred, f)
			}
		},
	})
	expect := func(step string, wantBytes uint64, wantAt time.Time, wantCalls int) {
		t.Helper()
		s, ok := c.get("/v")
		if !ok || s.Usage.Bytes != wantBytes || !s.At.Equal(wantAt) || fm.calls["/v"] != wantCalls {
			t.Fatalf("%s: got %+v ok=%v after %d walks; want %d bytes at %v after %d walks", step, s, ok, fm.calls["/v"], wantBytes, wantAt, wantCalls)
		}
	}

	expect("first read measures", 100, t0, 1)
	fm.usage["/v"] = 200
	clk.Step(30 * time.Second)
	expect("within the period the sample is kept", 100, t0, 1)
	clk.Step(39 * time.Second)
	expect("the jitter extends the period", 100, t0, 1)
	clk.Step(time.Second)
	t1 := clk.Now()
	expect("due after period plus jitter", 200, t1, 2)

	// A failing walk keeps the last sample and waits a period again.
	fm.err["/v"] = errors.New("permission denied")
	clk.Step(70 * time.Second)
	expect("failure keeps the last sample", 200, t1, 3)
	clk.Step(time.Minute)
	expect("no retry before the period", 200, t1, 3)
	delete(fm.err, "/v")

	// One measurement at a time per volume: a read while one runs starts
	// none.
	sync = false
	clk.Step(10 * time.Second)
	fm.usage["/v"] = 300
	expect("measurement started in the background", 200, t1, 3)
	if len(deferred) != 1 {
		t.Fatalf("%d measurements started, want 1", len(deferred))
	}
	expect("read while measuring", 200, t1, 3)
	if len(deferred) != 1 {
		t.Fatalf("a second measurement started while one runs")
	}
	deferred[0]()
	expect("background result", 300, clk.Now(), 4)

	// A volume not set up yet is looked at again on the next read.
	fm.err["/new"] = fmt.Errorf("walk: %w", fs.ErrNotExist)
	sync = true
	if _, ok := c.get("/new"); ok || fm.calls["/new"] != 1 {
		t.Fatalf("missing volume reported or not walked")
	}
	delete(fm.err, "/new")
	fm.usage["/new"] = 7
	if s, ok := c.get("/new"); !ok || s.Usage.Bytes != 7 || fm.calls["/new"] != 2 {
		t.Fatalf("volume set up later: %+v %v", s, ok)
	}

	// Forgotten volumes are measured afresh when seen again.
	c.keep(map[string]bool{"/new": true})
	if _, ok := c.entries["/v"]; ok {
		t.Fatalf("/v not forgotten")
	}
	expect("forgotten volume measured at once", 300, clk.Now(), 5)
}

func TestAssemblePodVolumes(t *testing.T) {
	now := time.Unix(2000, 0)
	at := time.Unix(1990, 0)
	sb := sandbox("sb", "ns", "p", "u", true, 3e9)
	ctrs := []containerInput{{Container: container("c1", "sb", "a", true, 1), Stats: ctrStats("c1", "a", 6e9, 10, 100, 150, ""), Logs: &diskUsage{Bytes: 4096, Inodes: 1}}}
	nodeFs := &fsInfo{Capacity: 1 << 30, Available: 1 << 29, Inodes: 1000, InodesFree: 500}
	tmpfs := fsInfo{Capacity: 8 << 20, Available: 8 << 20, Inodes: 100, InodesFree: 99}
	in := podInput{Sandbox: sb, Containers: ctrs, EtcHosts: &diskUsage{Bytes: 4096, Inodes: 1}, Volumes: []volumeInput{
		{Name: "scratch", Local: true, Sample: volumeSample{Usage: diskUsage{Bytes: 20 << 20, Inodes: 2}, Fs: *nodeFs, At: at}},
		{Name: "ram", Sample: volumeSample{Usage: diskUsage{Bytes: 1 << 20, Inodes: 2}, Fs: tmpfs, At: at}},
		{Name: "cm", Local: true, Sample: volumeSample{Usage: diskUsage{Bytes: 8192, Inodes: 3}, Fs: *nodeFs, At: at}},
	}}
	ps := assemblePod(in, nodeFs, now)

	var names []string
	for _, v := range ps.VolumeStats {
		names = append(names, v.Name)
	}
	if !reflect.DeepEqual(names, []string{"cm", "ram", "scratch"}) {
		t.Fatalf("volumes = %v, want sorted cm ram scratch", names)
	}
	ram := ps.VolumeStats[1]
	wantRAM := statsapi.FsStats{Time: ram.Time, AvailableBytes: u64(8 << 20), CapacityBytes: u64(8 << 20), UsedBytes: u64(1 << 20),
		Inodes: u64(100), InodesFree: u64(99), InodesUsed: u64(2)}
	if !reflect.DeepEqual(ram.FsStats, wantRAM) || !ram.Time.Time.Equal(at) || ram.PVCRef != nil {
		t.Errorf("ram volume = %+v, want %+v at the sample time", ram, wantRAM)
	}
	// Writable layer 8192 + logs 4096 + etc-hosts 4096 + scratch + cm; the
	// Memory emptyDir is not disk.
	wantUsed := uint64(8192 + 4096 + 4096 + 20<<20 + 8192)
	wantInodes := uint64(5 + 1 + 1 + 2 + 3)
	if *ps.EphemeralStorage.UsedBytes != wantUsed || *ps.EphemeralStorage.InodesUsed != wantInodes {
		t.Errorf("ephemeral storage used %d inodes %d, want %d and %d", *ps.EphemeralStorage.UsedBytes, *ps.EphemeralStorage.InodesUsed, wantUsed, wantInodes)
	}
	if *ps.EphemeralStorage.CapacityBytes != 1<<30 {
		t.Errorf("ephemeral storage is not framed by the nodefs: %+v", ps.EphemeralStorage)
	}

	in.Volumes = nil
	if ps := assemblePod(in, nodeFs, now); ps.VolumeStats != nil {
		t.Errorf("no measured volume, got %+v", ps.VolumeStats)
	}
}

// TestSummaryVolumes runs the provider with volume stats on: pod a's
// emptyDir is reported and counted in its ephemeral storage, its hostPath
// is not, and the cache follows the pods reported.
func TestSummaryVolumes(t *testing.T) {
	f := newFixture(t)
	pod := podWithUID("u-1")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: f.rootDir}}},
	}
	f.p.cfg.Pods = fakePods{pod}
	f.p.volumes = newVolumeCache(volumeCacheConfig{Clock: f.clock, Period: time.Minute, Spawn: func(fn func()) { fn() }})
	dir := filepath.Join(f.rootDir, "pods", "u-1", "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	writeFull(t, filepath.Join(dir, "fill"), 3<<20)
	fill := blocks(t, filepath.Join(dir, "fill")) + blocks(t, dir)

	if _, err := f.p.Summary(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if len(f.p.volumes.entries) != 0 {
		t.Fatalf("a CPU-and-memory summary measured volumes")
	}
	s, err := f.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	a := findPod(t, s, "a")
	if len(a.VolumeStats) != 1 || a.VolumeStats[0].Name != "scratch" {
		t.Fatalf("volume stats = %+v, want scratch only", a.VolumeStats)
	}
	vs := a.VolumeStats[0]
	if *vs.UsedBytes != fill || *vs.InodesUsed != 2 || vs.CapacityBytes == nil || *vs.CapacityBytes == 0 {
		t.Errorf("scratch = %+v, want %d bytes in 2 inodes on a sized filesystem", vs.FsStats, fill)
	}
	// Without the volume: writable layers, logs, etc-hosts.
	var rest uint64
	for _, c := range a.Containers {
		rest += *c.Rootfs.UsedBytes
		if c.Logs != nil {
			rest += *c.Logs.UsedBytes
		}
	}
	rest += blocks(t, filepath.Join(f.logsDir, "default_a_u-1", "pod-level.log")) + blocks(t, filepath.Join(f.rootDir, "pods", "u-1", "etc-hosts"))
	if got := *a.EphemeralStorage.UsedBytes; got != rest+fill {
		t.Errorf("ephemeral storage = %d, want %d (containers, logs, etc-hosts) + %d (scratch)", got, rest, fill)
	}

	f.p.cfg.Pods = fakePods{podWithUID("u-3")}
	if _, err := f.p.Summary(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if len(f.p.volumes.entries) != 0 {
		t.Errorf("the volumes of a pod no longer reported are still cached: %v", f.p.volumes.entries)
	}
}

// Claims' volumes are measured by their plugin and reported with their
// claim; they do not count in the pod's ephemeral storage.
func TestSummaryPluginVolumes(t *testing.T) {
	f := newFixture(t)
	pod := podWithUID("u-1")
	f.p.cfg.Pods = fakePods{pod}
	f.p.volumes = newVolumeCache(volumeCacheConfig{Clock: f.clock, Period: time.Minute, Spawn: func(fn func()) { fn() }})
	noVolumes, err := f.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	f.p.cfg.PluginVolumes = func(p *v1.Pod) []PluginVolume {
		return []PluginVolume{{Name: "data", PVC: &statsapi.PVCReference{Name: "claim", Namespace: "default"}, Path: "/pods/u-1/volumes/kubernetes.io~csi/pv-1/mount",
			Measure: func() (VolumeUsage, error) {
				calls++
				return VolumeUsage{UsedBytes: 4096, CapacityBytes: 1 << 30, AvailableBytes: 1<<30 - 4096, Inodes: 100, InodesFree: 90, InodesUsed: 10}, nil
			}}}
	}
	if _, err := f.p.Summary(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	s, err := f.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	a := findPod(t, s, "a")
	if len(a.VolumeStats) != 1 || calls != 1 {
		t.Fatalf("volume stats %+v after %d measurements", a.VolumeStats, calls)
	}
	vs := a.VolumeStats[0]
	if vs.Name != "data" || vs.PVCRef == nil || vs.PVCRef.Name != "claim" || *vs.UsedBytes != 4096 || *vs.CapacityBytes != 1<<30 ||
		*vs.AvailableBytes != 1<<30-4096 || *vs.Inodes != 100 || *vs.InodesFree != 90 || *vs.InodesUsed != 10 {
		t.Errorf("volume %+v (pvc %+v)", vs.FsStats, vs.PVCRef)
	}
	before := findPod(t, noVolumes, "a")
	if *a.EphemeralStorage.UsedBytes != *before.EphemeralStorage.UsedBytes {
		t.Errorf("a claim's volume counted in ephemeral storage: %d, was %d", *a.EphemeralStorage.UsedBytes, *before.EphemeralStorage.UsedBytes)
	}
}

func TestVolumeStatsCollector(t *testing.T) {
	f := newFixture(t)
	a, b := podWithUID("u-1"), podWithUID("u-2")
	f.p.cfg.Pods = fakePods{a, b}
	f.p.volumes = newVolumeCache(volumeCacheConfig{Clock: f.clock, Period: time.Minute, Spawn: func(fn func()) { fn() }})
	f.p.cfg.PluginVolumes = func(p *v1.Pod) []PluginVolume {
		return []PluginVolume{
			// Both pods use the claim: reported once.
			{Name: "data", PVC: &statsapi.PVCReference{Name: "shared", Namespace: "ns"}, Path: "/pods/" + string(p.UID) + "/data",
				Measure: func() (VolumeUsage, error) {
					return VolumeUsage{UsedBytes: 10, CapacityBytes: 100, AvailableBytes: 90, Inodes: 7, InodesFree: 5, InodesUsed: 2}, nil
				}},
			{Name: "inline", Path: "/pods/" + string(p.UID) + "/inline", Measure: func() (VolumeUsage, error) { return VolumeUsage{}, nil }},
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.p.VolumeStatsCollector())
	got, err := testutil.GatherAndCount(reg)
	if err != nil || got != 6 {
		t.Fatalf("%d metrics (%v), want the 6 gauges of one claim", got, err)
	}
	want := `
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="shared"} 10
# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="shared"} 100
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_volume_stats_used_bytes", "kubelet_volume_stats_capacity_bytes"); err != nil {
		t.Error(err)
	}
}
