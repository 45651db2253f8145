package stats

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// cadvisorFixture is a fake machine: a cgroup v1 tree (separate cpu and
// cpuacct mounts, as here) under cg, a procfs under proc, and a runtime
// with pods whose sandboxes and containers live in the tree.
type cadvisorFixture struct {
	cg, proc string
	rt       *fakeRuntime
	images   *fakeImages
	p        *Provider
	now      time.Time
}

const (
	fixturePod  = "/kubepods/burstable/pod11111111-2222-3333-4444-555555555555"
	fixtureUID  = "11111111-2222-3333-4444-555555555555"
	sandboxID   = "aaaa0000"
	containerID = "bbbb0000"
)

// cgroupFiles are the v1 files of one cgroup with distinct values, scaled
// by k so that each cgroup of a fixture reads differently.
func cgroupFiles(rel string, k uint64, quota string) map[string]string {
	return map[string]string{
		"cpuacct" + rel + "/cpuacct.usage":              fmt.Sprint(2_500_000_000 * k),
		"cpuacct" + rel + "/cpuacct.stat":               fmt.Sprintf("user %d\nsystem %d\n", 150*k, 70*k),
		"cpu" + rel + "/cpu.stat":                       fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time %d\nnr_bursts 0\nburst_time 0\n", 300*k, 20*k, 1_500_000_000*k),
		"cpu" + rel + "/cpu.shares":                     fmt.Sprint(102 * k),
		"cpu" + rel + "/cpu.cfs_period_us":              "100000",
		"cpu" + rel + "/cpu.cfs_quota_us":               quota,
		"memory" + rel + "/memory.usage_in_bytes":       fmt.Sprint(10_000_000 * k),
		"memory" + rel + "/memory.max_usage_in_bytes":   fmt.Sprint(12_000_000 * k),
		"memory" + rel + "/memory.failcnt":              fmt.Sprint(3 * k),
		"memory" + rel + "/memory.kmem.usage_in_bytes":  fmt.Sprint(400_000 * k),
		"memory" + rel + "/memory.limit_in_bytes":       "67108864",
		"memory" + rel + "/memory.soft_limit_in_bytes":  "9223372036854771712",
		"memory" + rel + "/memory.memsw.limit_in_bytes": "67108864",
		"memory" + rel + "/memory.oom_control":          fmt.Sprintf("oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", k),
		"memory" + rel + "/memory.stat": fmt.Sprintf("cache 1\nrss 2\nmapped_file 3\npgfault %d\npgmajfault %d\n"+
			"total_cache %d\ntotal_rss %d\ntotal_swap 0\ntotal_mapped_file %d\ntotal_active_file %d\ntotal_inactive_file %d\n",
			900*k, 9*k, 4_000_000*k, 5_000_000*k, 100_000*k, 1_000_000*k, 2_000_000*k),
		"pids" + rel + "/pids.current":   fmt.Sprint(4 * k),
		"pids" + rel + "/pids.max":       "max",
		"pids" + rel + "/cgroup.procs":   "",
		"memory" + rel + "/cgroup.procs": "",
	}
}

func newCadvisorFixture(t testing.TB) *cadvisorFixture {
	f := &cadvisorFixture{cg: t.TempDir(), proc: t.TempDir(), now: time.Unix(1_800_000_000, 0)}
	files := map[string]string{}
	add := func(m map[string]string) {
		for k, v := range m {
			files[k] = v
		}
	}
	add(cgroupFiles("", 100, "-1"))
	add(cgroupFiles("/kubepods", 10, "-1"))
	add(cgroupFiles("/kubepods/burstable", 9, "-1"))
	add(cgroupFiles("/kubepods/besteffort", 1, "-1"))
	add(cgroupFiles(fixturePod, 5, "-1"))
	add(cgroupFiles(fixturePod+"/"+sandboxID, 1, "-1"))
	add(cgroupFiles(fixturePod+"/"+containerID, 2, "20000"))
	files["pids"+fixturePod+"/"+containerID+"/cgroup.procs"] = "4242\n4243\n"
	files["pids"+fixturePod+"/"+containerID+"/pids.max"] = "1024"
	writeTree(t, f.cg, files)
	writeTree(t, f.proc, map[string]string{
		"1/net/dev":   netDevText,
		"777/net/dev": "Inter-|\n face |bytes\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n  eth0: 5000 50 1 2 0 0 0 0 6000 60 3 4 0 0 0 0\n",
		"1/limits":    "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n",
		"diskstats":   " 254       0 vda 715692 1000 2000 3500 800 20 40 6000 2 7000 9000 0 0 0 0\n",
	})
	// The root's filesystem is the temporary directory's, as /dev/vda.
	writeTree(t, f.proc, map[string]string{"self/mountinfo": "22 1 254:0 / " + f.proc + " rw,relatime - ext4 /dev/vda rw\n" +
		"23 22 0:21 / /proc rw - proc proc rw\n"})
	for _, fd := range []string{"4242/fd", "4243/fd"} {
		if err := os.MkdirAll(filepath.Join(f.proc, fd), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 4242 has a socket and a file open, 4243 one file.
	for link, target := range map[string]string{"4242/fd/0": "socket:[123]", "4242/fd/1": "/dev/null", "4243/fd/0": "/dev/null"} {
		if err := os.Symlink(target, filepath.Join(f.proc, link)); err != nil {
			t.Fatal(err)
		}
	}
	f.rt = &fakeRuntime{
		sandboxes:    []*runtimeapi.PodSandbox{sandbox(sandboxID, "ns1", "web", fixtureUID, true, 1)},
		containers:   []*runtimeapi.Container{container(containerID, sandboxID, "app", true, 2)},
		verbose:      map[string]string{sandboxID: verboseInfo(777, fixturePod+"/"+sandboxID)},
		statusConfig: `{"sandboxImage":"registry.k8s.io/pause:3.10"}`,
	}
	f.rt.containers[0].ImageRef = "sha256:abc"
	f.images = &fakeImages{images: []*runtimeapi.Image{{Id: "sha256:abc", RepoTags: []string{"docker.io/library/busybox:1.36"}}}}
	f.p = New(Config{
		Runtime: f.rt, Images: f.images, Cgroups: hostinfo.Cgroups(detectCgroupLayout(f.cg)), Clock: clocktesting.NewFakeClock(f.now),
		NodeAllocatableCgroup: "/kubepods",
		Machine: Machine{MachineID: "mid", SystemUUID: "uuid", BootID: "boot", KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)",
			Cores: 4, PhysicalCores: 2, Sockets: 1, MemoryBytes: 8 << 30},
	})
	f.p.procRoot = f.proc
	t.Cleanup(f.p.cadvisor.files.closeAll)
	return f
}

const netDevText = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
	"    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n" +
	"  eth0: 1000 10 1 2 0 0 0 0 2000 20 3 4 0 0 0 0\n" +
	"veth1234: 7 7 0 0 0 0 0 0 7 7 0 0 0 0 0 0\n"

func (f *cadvisorFixture) scrape(t testing.TB) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	rec := httptest.NewRecorder()
	f.p.CadvisorHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/cadvisor", nil))
	body := rec.Body.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("unparseable exposition: %v\n%s", err, body)
	}
	return body, mfs
}

// value finds the series of family name whose labels include want.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestCadvisorValuesFromFakeCgroups(t *testing.T) {
	f := newCadvisorFixture(t)
	_, mfs := f.scrape(t)
	ctr := map[string]string{"id": fixturePod + "/" + containerID}
	pod := map[string]string{"id": fixturePod}
	root := map[string]string{"id": "/"}
	cases := []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"container_cpu_usage_seconds_total", map[string]string{"id": fixturePod + "/" + containerID, "cpu": "total"}, 5},
		{"container_cpu_user_seconds_total", ctr, 3},
		{"container_cpu_system_seconds_total", ctr, 1.4},
		{"container_cpu_cfs_periods_total", ctr, 600},
		{"container_cpu_cfs_throttled_periods_total", ctr, 40},
		{"container_cpu_cfs_throttled_seconds_total", ctr, 3},
		{"container_cpu_cfs_burst_periods_total", ctr, 0},
		{"container_memory_usage_bytes", ctr, 20_000_000},
		{"container_memory_max_usage_bytes", ctr, 24_000_000},
		{"container_memory_working_set_bytes", ctr, 16_000_000},
		{"container_memory_cache", ctr, 8_000_000},
		{"container_memory_rss", ctr, 10_000_000},
		{"container_memory_mapped_file", ctr, 200_000},
		{"container_memory_swap", ctr, 0},
		{"container_memory_failcnt", ctr, 6},
		{"container_memory_kernel_usage", ctr, 800_000},
		{"container_memory_total_active_file_bytes", ctr, 2_000_000},
		{"container_memory_total_inactive_file_bytes", ctr, 4_000_000},
		{"container_memory_failures_total", map[string]string{"id": fixturePod + "/" + containerID, "failure_type": "pgfault", "scope": "container"}, 1800},
		{"container_memory_failures_total", map[string]string{"id": fixturePod + "/" + containerID, "failure_type": "pgmajfault", "scope": "hierarchy"}, 18},
		{"container_oom_events_total", ctr, 2},
		{"container_spec_cpu_shares", ctr, 204},
		{"container_spec_cpu_period", ctr, 100000},
		{"container_spec_cpu_quota", ctr, 20000},
		{"container_spec_memory_limit_bytes", ctr, 67108864},
		{"container_spec_memory_reservation_limit_bytes", ctr, 0},
		{"container_spec_memory_swap_limit_bytes", ctr, 67108864},
		{"container_processes", ctr, 2},
		{"container_file_descriptors", ctr, 3},
		{"container_sockets", ctr, 1},
		{"container_threads", ctr, 8},
		{"container_threads_max", ctr, 1024},
		{"container_health_state", ctr, -1},
		{"container_last_seen", ctr, float64(f.now.Unix())},
		{"container_tasks_state", map[string]string{"id": fixturePod, "state": "running"}, 0},
		{"container_cpu_load_average_10s", pod, 0},
		{"container_memory_usage_bytes", pod, 50_000_000},
		{"container_cpu_usage_seconds_total", root, 250},
		{"container_threads_max", map[string]string{"id": "/kubepods"}, 0},
		{"container_network_receive_bytes_total", map[string]string{"id": "/", "interface": "eth0"}, 1000},
		{"container_network_receive_packets_total", map[string]string{"id": "/", "interface": "eth0"}, 10},
		{"container_network_receive_errors_total", map[string]string{"id": "/", "interface": "eth0"}, 1},
		{"container_network_receive_packets_dropped_total", map[string]string{"id": "/", "interface": "eth0"}, 2},
		{"container_network_transmit_bytes_total", map[string]string{"id": "/", "interface": "eth0"}, 2000},
		{"container_network_transmit_packets_total", map[string]string{"id": "/", "interface": "eth0"}, 20},
		{"container_network_transmit_errors_total", map[string]string{"id": "/", "interface": "eth0"}, 3},
		{"container_network_transmit_packets_dropped_total", map[string]string{"id": "/", "interface": "eth0"}, 4},
		{"container_network_transmit_bytes_total", map[string]string{"id": fixturePod + "/" + sandboxID, "interface": "eth0"}, 6000},
		{"container_ulimits_soft", map[string]string{"id": "/", "ulimit": "max_open_files"}, 1048576},
		{"container_scrape_error", nil, 0},
		{"container_fs_reads_total", map[string]string{"id": "/", "device": "/dev/vda"}, 715692},
		{"container_fs_reads_merged_total", map[string]string{"device": "/dev/vda"}, 1000},
		{"container_fs_sector_reads_total", map[string]string{"device": "/dev/vda"}, 2000},
		{"container_fs_read_seconds_total", map[string]string{"device": "/dev/vda"}, 3.5},
		{"container_fs_writes_total", map[string]string{"device": "/dev/vda"}, 800},
		{"container_fs_writes_merged_total", map[string]string{"device": "/dev/vda"}, 20},
		{"container_fs_sector_writes_total", map[string]string{"device": "/dev/vda"}, 40},
		{"container_fs_write_seconds_total", map[string]string{"device": "/dev/vda"}, 6},
		{"container_fs_io_current", map[string]string{"device": "/dev/vda"}, 2},
		{"container_fs_io_time_seconds_total", map[string]string{"device": "/dev/vda"}, 7},
		{"container_fs_io_time_weighted_seconds_total", map[string]string{"device": "/dev/vda"}, 9},
		{"machine_cpu_cores", map[string]string{"machine_id": "mid", "boot_id": "boot", "system_uuid": "uuid"}, 4},
		{"machine_cpu_physical_cores", nil, 2},
		{"machine_cpu_sockets", nil, 1},
		{"machine_memory_bytes", nil, 8 << 30},
		{"machine_nvm_capacity", map[string]string{"mode": "memory_mode"}, 0},
		{"cadvisor_version_info", map[string]string{"kernelVersion": "6.1.0", "osVersion": "Debian GNU/Linux 12 (bookworm)"}, 1},
	}
	for _, c := range cases {
		got, ok := value(t, mfs, c.family, c.labels)
		if !ok {
			t.Errorf("%s%v: no series", c.family, c.labels)
			continue
		}
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(f.proc, &st); err != nil {
		t.Fatal(err)
	}
	for family, want := range map[string]float64{
		"container_fs_limit_bytes":  float64(st.Blocks * uint64(st.Bsize)),
		"container_fs_inodes_total": float64(st.Files),
	} {
		if got, _ := value(t, mfs, family, map[string]string{"id": "/", "device": "/dev/vda"}); got != want {
			t.Errorf("%s = %v, want %v (statfs)", family, got, want)
		}
	}
	for _, family := range []string{"container_fs_usage_bytes", "container_fs_inodes_free"} {
		if _, ok := value(t, mfs, family, map[string]string{"id": "/", "device": "/dev/vda"}); !ok {
			t.Errorf("%s: no series", family)
		}
	}
	// Only the container with a quota has CFS series; only the sandbox and
	// the root have a network; lo and veth are left out.
	if n := len(mfs["container_cpu_cfs_periods_total"].GetMetric()); n != 1 {
		t.Errorf("cfs periods series = %d, want 1", n)
	}
	if n := len(mfs["container_network_receive_bytes_total"].GetMetric()); n != 2 {
		t.Errorf("network series = %d, want 2 (root eth0, sandbox eth0)", n)
	}
}

func TestCadvisorLabels(t *testing.T) {
	f := newCadvisorFixture(t)
	_, mfs := f.scrape(t)
	want := map[string]map[string]string{
		"/":                            {"container": "", "image": "", "name": "", "namespace": "", "pod": ""},
		"/kubepods":                    {"container": "", "image": "", "name": "", "namespace": "", "pod": ""},
		"/kubepods/burstable":          {"container": "", "image": "", "name": "", "namespace": "", "pod": ""},
		fixturePod:                     {"container": "", "image": "", "name": "", "namespace": "ns1", "pod": "web"},
		fixturePod + "/" + sandboxID:   {"container": "", "image": "registry.k8s.io/pause:3.10", "name": sandboxID, "namespace": "ns1", "pod": "web"},
		fixturePod + "/" + containerID: {"container": "app", "image": "docker.io/library/busybox:1.36", "name": containerID, "namespace": "ns1", "pod": "web"},
	}
	seen := map[string]bool{}
	for _, m := range mfs["container_memory_working_set_bytes"].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		id := got["id"]
		seen[id] = true
		w, ok := want[id]
		if !ok {
			continue
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("id %s: label %s = %q, want %q", id, k, got[k], v)
			}
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("no series for cgroup %s", id)
		}
	}
	// Images are listed once, then known.
	f.scrape(t)
	if f.images.lists != 1 {
		t.Errorf("ListImages called %d times over two scrapes, want 1", f.images.lists)
	}
}

// Every family has the name, type and help of upstream's (as its v1.36
// kubelet exposed them on this kind of machine, testdata), and every label
// set has the upstream label names.
func TestCadvisorFamiliesMatchUpstream(t *testing.T) {
	up := readUpstreamFamilies(t, "testdata/upstream-cadvisor-families.txt")
	f := newCadvisorFixture(t)
	_, mfs := f.scrape(t)
	for name, mf := range mfs {
		u, ok := up[name]
		if !ok {
			t.Errorf("family %s: upstream has none", name)
			continue
		}
		if u.GetType() != mf.GetType() || u.GetHelp() != mf.GetHelp() {
			t.Errorf("family %s: %s %q, upstream %s %q", name, mf.GetType(), mf.GetHelp(), u.GetType(), u.GetHelp())
		}
		want := labelNames(u.GetMetric()[0])
		for _, m := range mf.GetMetric() {
			if got := labelNames(m); got != want {
				t.Errorf("family %s: labels %s, upstream %s", name, got, want)
				break
			}
		}
	}
	for name := range up {
		if _, ok := mfs[name]; !ok {
			t.Errorf("upstream family %s missing", name)
		}
	}
}

func readUpstreamFamilies(t *testing.T, file string) map[string]*dto.MetricFamily {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func labelNames(m *dto.Metric) string {
	var names []string
	for _, l := range m.GetLabel() {
		names = append(names, l.GetName())
	}
	return strings.Join(names, ",")
}

// BenchmarkCadvisorScrape is one /metrics/cadvisor scrape of 100 pods
// (sandbox and one container each, in burstable pod cgroups) over a fake
// cgroup tree in a temporary directory (slower to open than cgroupfs); it
// reports CPU time per scrape next to wall time.
func BenchmarkCadvisorScrape(b *testing.B) {
	f := newCadvisorFixture(b)
	files := map[string]string{}
	for i := 0; i < 100; i++ {
		uid := fmt.Sprintf("%08d-0000-0000-0000-000000000000", i)
		pod := "/kubepods/burstable/pod" + uid
		sb, ctr := fmt.Sprintf("sb%062d", i), fmt.Sprintf("ct%062d", i)
		for _, m := range []map[string]string{cgroupFiles(pod, 3, "-1"), cgroupFiles(pod+"/"+sb, 1, "-1"), cgroupFiles(pod+"/"+ctr, 2, "50000")} {
			for k, v := range m {
				files[k] = v
			}
		}
		f.rt.sandboxes = append(f.rt.sandboxes, sandbox(sb, "bench", fmt.Sprintf("pod-%d", i), uid, true, 1))
		c := container(ctr, sb, "app", true, 2)
		c.ImageRef = "sha256:abc"
		f.rt.containers = append(f.rt.containers, c)
		f.rt.verbose[sb] = verboseInfo(777, pod+"/"+sb)
	}
	writeTree(b, f.cg, files)
	clk := f.p.clock.(*clocktesting.FakeClock)
	// Plain, and gzipped as Prometheus asks (Accept-Encoding: gzip).
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/metrics/cadvisor", nil)
			req.Header.Set("Accept-Encoding", enc)
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime()
			for i := 0; i < b.N; i++ {
				// Scrapes 15 s apart, as Prometheus's: the process counts are
				// recounted every scrape, the spec every fourth.
				clk.Step(15 * time.Second)
				f.p.CadvisorHandler().ServeHTTP(discardWriter{}, req)
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/scrape")
		})
	}
}

// discardWriter is a ResponseWriter that drops the body, as a socket
// would take it, without a recorder's buffer growth in the measurement.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

// A scrape takes the PLEG's listing when it is fresh and lists the runtime
// itself only when it is not.
func TestCadvisorSharesThePLEGListing(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			f := newCadvisorFixture(t)
			listed, err := kuberuntime.ListPods(context.Background(), f.rt, true)
			if err != nil {
				t.Fatal(err)
			}
			var asked time.Duration
			f.p.cfg.RecentPods = func(maxAge time.Duration) ([]*kuberuntime.RunningPod, bool) {
				asked = maxAge
				return listed, fresh
			}
			before := f.rt.callCount("ListPodSandbox") + f.rt.callCount("ListContainers")
			_, mfs := f.scrape(t)
			lists := f.rt.callCount("ListPodSandbox") + f.rt.callCount("ListContainers") - before
			if asked != scrapeListingAge {
				t.Errorf("asked for a listing at most %v old, want %v", asked, scrapeListingAge)
			}
			if want := map[bool]int{true: 0, false: 2}[fresh]; lists != want {
				t.Errorf("the scrape listed the runtime %d times, want %d", lists, want)
			}
			found := false
			for _, m := range mfs["container_memory_usage_bytes"].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "container" && l.GetValue() == "app" {
						found = true
					}
				}
			}
			if !found {
				t.Error("no container_memory_usage_bytes series for container app")
			}
		})
	}
}
