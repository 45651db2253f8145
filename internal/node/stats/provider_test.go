package stats

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// fixture is a node with fake procfs, cgroup tree and CRI, and real
// directories for the nodefs, the writable layers and the pod logs.
type fixture struct {
	p          *Provider
	rt         *fakeRuntime
	images     *fakeImages
	clock      *clocktesting.FakeClock
	cgroupRoot string
	hostRoot   string // holds proc/
	procRoot   string
	rootDir    string
	logsDir    string
	layerMount string
	t0         time.Time
}

const (
	memTotalKB = 1000000
	criTS      = int64(1_700_000_100_000_000_000)
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		cgroupRoot: cgroupV1Tree(t),
		hostRoot:   t.TempDir(),
		rootDir:    t.TempDir(),
		logsDir:    t.TempDir(),
		layerMount: t.TempDir(),
		t0:         time.Unix(1_700_000_100, 0),
	}
	f.procRoot = filepath.Join(f.hostRoot, "proc")
	f.clock = clocktesting.NewFakeClock(f.t0)
	writeTree(t, f.cgroupRoot, map[string]string{
		"cpuacct/system.slice/kubelet.service/cpuacct.usage":                 "300\n",
		"memory/system.slice/kubelet.service/memory.usage_in_bytes":          "2000\n",
		"memory/system.slice/kubelet.service/memory.stat":                    "total_inactive_file 500\n",
		"cpuacct/system.slice/containerd.service/cpuacct.usage":              "400\n",
		"memory/system.slice/containerd.service/memory.usage_in_bytes":       "3000\n",
		"memory/system.slice/containerd.service/memory.stat":                 "total_inactive_file 1000\n",
		"memory/system.slice/containerd.service/memory.limit_in_bytes":       "10000\n",
		"memory/system.slice/containerd.service/memory.memsw.usage_in_bytes": "3000\n",
	})
	const kubeletCgroup = "4:memory:/system.slice/kubelet.service\n2:cpuacct:/system.slice/kubelet.service\n1:cpu:/system.slice/kubelet.service\n0::/\n"
	writeTree(t, f.procRoot, map[string]string{
		"stat":                                "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\nbtime 1700000000\n",
		"meminfo":                             "MemTotal:        1000000 kB\nMemFree:          400000 kB\nSwapTotal:        100 kB\nSwapFree:        60 kB\n",
		"net/dev":                             netDevSample,
		"net/route":                           "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n",
		"loadavg":                             "0.10 0.20 0.30 1/321 555\n",
		"sys/kernel/pid_max":                  "4194304\n",
		"sys/kernel/threads-max":              "200000\n",
		strconv.Itoa(os.Getpid()) + "/cgroup": kubeletCgroup,
		"12/comm":                             "bash\n",
		"4242/comm":                           "containerd\n",
		"4242/cgroup":                         strings.ReplaceAll(kubeletCgroup, "kubelet", "containerd"),
		"777/net/dev":                         "Inter-|\n face |\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n  eth0: 916 8 0 0 0 0 0 0 472 5 0 0 0 0 0 0\n",
		"888/net/dev":                         "Inter-|\n face |\n  eth0: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n",
	})
	writeTree(t, f.logsDir, map[string]string{
		"default_a_u-1/app/0.log":     strings.Repeat("x", 10000),
		"default_a_u-1/app/1.log":     "y",
		"default_a_u-1/pod-level.log": "z",
	})
	writeTree(t, f.rootDir, map[string]string{"pods/u-1/etc-hosts": "127.0.0.1 localhost\n"})

	ts := criTS
	created := criTS - int64(time.Hour) // sandbox and container creation times are offsets from this
	f.rt = &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{
			sandbox("sbA", "default", "a", "u-1", true, created+100),
			sandbox("sbB", "default", "b", "u-2", true, created+100),
			sandbox("sbC", "kube-system", "c", "u-3", true, created+100),
			sandbox("sbD", "default", "d", "u-4", true, created+100),
			sandbox("sbE-old", "default", "e", "u-5", false, created+10),
			sandbox("sbE-new", "default", "e", "u-5", true, created+20),
		},
		containers: []*runtimeapi.Container{
			container("a0", "sbA", "app", false, created+50),
			container("a1", "sbA", "app", true, created+150),
			container("a2", "sbA", "sidecar", true, created+160),
			container("b1", "sbB", "main", true, created+100),
			container("c1", "sbC", "one", true, created+100),
			container("c2", "sbC", "two", true, created+100),
			container("d1", "sbD", "done", false, created+100),
			container("e0", "sbE-old", "main", false, created+10),
			container("e1", "sbE-new", "main", true, created+20),
		},
		containerStats: []*runtimeapi.ContainerStats{
			ctrStats("a0", "app", ts, 1, 1, 1, f.layerMount),
			ctrStats("a1", "app", ts, 1000, 400, 500, f.layerMount),
			ctrStats("a2", "sidecar", ts, 2000, 600, 700, f.layerMount),
			ctrStats("b1", "main", ts, 5, 5, 5, f.layerMount),
			ctrStats("c1", "one", ts, 10, 100, 150, f.layerMount),
			ctrStats("c2", "two", ts, 20, 200, 250, f.layerMount),
			ctrStats("d1", "done", ts, 1, 1, 1, f.layerMount),
			ctrStats("e1", "main", ts, 30, 300, 300, f.layerMount),
		},
		sandboxStatsErr: status.Error(codes.Unknown, "failed to get cgroup metrics for sandbox because cgroupPath is empty"),
		verbose: map[string]string{
			"sbA": verboseInfo(777, "/kubepods/burstable/podu-1/sbA"),
			"sbC": verboseInfo(888, "/k8s.io/sbC"),
		},
	}
	f.images = &fakeImages{resp: &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp: ts, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.layerMount},
		UsedBytes: &runtimeapi.UInt64Value{Value: 4030464}, InodesUsed: &runtimeapi.UInt64Value{Value: 424},
	}}}}
	f.p = New(Config{
		Runtime: f.rt, Images: f.images,
		Pods:     fakePods{podWithUID("u-1"), podWithUID("u-3"), podWithUID("u-4"), podWithUID("u-5")},
		NodeName: "node-1", RootDir: f.rootDir, PodLogsDir: f.logsDir, Clock: f.clock, Cgroups: hostinfo.Cgroups(detectCgroupLayout(f.cgroupRoot)),
	})
	f.p.host.Root, f.p.procRoot = f.hostRoot, f.procRoot
	return f
}

// blocks is what du counts for a file, independently of the code under test.
func blocks(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Blocks) * 512
}

func podNames(s *statsapi.Summary) []string {
	var out []string
	for _, p := range s.Pods {
		out = append(out, p.PodRef.Namespace+"/"+p.PodRef.Name+"/"+p.PodRef.UID)
	}
	return out
}

func findPod(t *testing.T, s *statsapi.Summary, name string) statsapi.PodStats {
	t.Helper()
	for _, p := range s.Pods {
		if p.PodRef.Name == name {
			return p
		}
	}
	t.Fatalf("pod %s not in summary %v", name, podNames(s))
	return statsapi.PodStats{}
}

func containerNames(p statsapi.PodStats) []string {
	var out []string
	for _, c := range p.Containers {
		out = append(out, c.Name)
	}
	return out
}

func TestSummaryFallbackPath(t *testing.T) {
	f := newFixture(t)
	s, err := f.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	nodeFs, err := statFS(f.rootDir)
	if err != nil {
		t.Fatal(err)
	}
	layerFs, err := statFS(f.layerMount)
	if err != nil {
		t.Fatal(err)
	}
	appLogs := blocks(t, filepath.Join(f.logsDir, "default_a_u-1/app/0.log")) + blocks(t, filepath.Join(f.logsDir, "default_a_u-1/app/1.log"))
	podLogs := blocks(t, filepath.Join(f.logsDir, "default_a_u-1/pod-level.log"))
	etcHosts := blocks(t, filepath.Join(f.rootDir, "pods/u-1/etc-hosts"))

	checks := []struct {
		name string
		got  any
		want any
	}{
		{"node name", s.Node.NodeName, "node-1"},
		{"node start is boot time", s.Node.StartTime.Unix(), int64(1700000000)},
		{"node cpu from root cpuacct", *s.Node.CPU.UsageCoreNanoSeconds, uint64(4000000000)},
		{"node cpu rate unknown on first read", s.Node.CPU.UsageNanoCores, (*uint64)(nil)},
		{"node memory usage", *s.Node.Memory.UsageBytes, uint64(1000000)},
		{"node working set", *s.Node.Memory.WorkingSetBytes, uint64(750000)},
		{"node available is capacity less working set", *s.Node.Memory.AvailableBytes, uint64(memTotalKB*1024 - 750000)},
		{"node rss", *s.Node.Memory.RSSBytes, uint64(300000)},
		{"node page faults", *s.Node.Memory.PageFaults, uint64(77)},
		{"node major page faults", *s.Node.Memory.MajorPageFaults, uint64(3)},
		{"node swap usage", *s.Node.Swap.SwapUsageBytes, uint64(40 * 1024)},
		{"node swap available", *s.Node.Swap.SwapAvailableBytes, uint64(60 * 1024)},
		{"node default interface", s.Node.Network.Name, "eth0"},
		{"node interfaces", len(s.Node.Network.Interfaces), 2},
		{"nodefs capacity", *s.Node.Fs.CapacityBytes, nodeFs.Capacity},
		{"nodefs inodes", *s.Node.Fs.Inodes, nodeFs.Inodes},
		{"imagefs used from CRI", *s.Node.Runtime.ImageFs.UsedBytes, uint64(4030464)},
		{"imagefs inodes used from CRI", *s.Node.Runtime.ImageFs.InodesUsed, uint64(424)},
		{"imagefs capacity from statfs", *s.Node.Runtime.ImageFs.CapacityBytes, layerFs.Capacity},
		{"containerfs is imagefs", s.Node.Runtime.ContainerFs, s.Node.Runtime.ImageFs},
		{"maxpid is the smaller limit", *s.Node.Rlimit.MaxPID, int64(200000)},
		{"curproc", *s.Node.Rlimit.NumOfRunningProcesses, int64(321)},
		{"desired pods with running containers, newest ready sandbox", podNames(s), []string{"default/a/u-1", "default/e/u-5", "kube-system/c/u-3"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	var sys []string
	for _, c := range s.Node.SystemContainers {
		sys = append(sys, c.Name)
		switch c.Name {
		case statsapi.SystemContainerKubelet:
			if *c.CPU.UsageCoreNanoSeconds != 300 || *c.Memory.WorkingSetBytes != 1500 || !c.StartTime.Time.Equal(f.t0) {
				t.Errorf("kubelet system container = cpu %d ws %d start %v", *c.CPU.UsageCoreNanoSeconds, *c.Memory.WorkingSetBytes, c.StartTime)
			}
		case statsapi.SystemContainerRuntime:
			if *c.CPU.UsageCoreNanoSeconds != 400 || *c.Memory.WorkingSetBytes != 2000 || *c.Memory.AvailableBytes != 8000 {
				t.Errorf("runtime system container = %+v", c)
			}
		case statsapi.SystemContainerPods:
			if *c.CPU.UsageCoreNanoSeconds != 2000000000 || *c.Memory.UsageBytes != 4096 {
				t.Errorf("pods system container = %+v", c)
			}
		}
	}
	if want := []string{"kubelet", "runtime", "pods"}; !reflect.DeepEqual(sys, want) {
		t.Errorf("system containers = %v, want %v", sys, want)
	}

	a := findPod(t, s, "a")
	podChecks := []struct {
		name string
		got  any
		want any
	}{
		{"a: only running containers", containerNames(a), []string{"app", "sidecar"}},
		{"a: start is sandbox creation", a.StartTime.UnixNano(), criTS - int64(time.Hour) + 100},
		{"a: cpu from pod cgroup", *a.CPU.UsageCoreNanoSeconds, uint64(1500)},
		{"a: memory usage from pod cgroup", *a.Memory.UsageBytes, uint64(8000)},
		{"a: working set from pod cgroup", *a.Memory.WorkingSetBytes, uint64(5000)},
		{"a: available from pod limit", *a.Memory.AvailableBytes, uint64(5000)},
		{"a: process count from pids", *a.ProcessStats.ProcessCount, uint64(4)},
		{"a: network from the sandbox netns", a.Network.Name, "eth0"},
		{"a: network rx", *a.Network.RxBytes, uint64(916)},
		{"a: loopback left out", len(a.Network.Interfaces), 1},
		{"a: app cpu from CRI", *a.Containers[0].CPU.UsageCoreNanoSeconds, uint64(1000)},
		{"a: app cpu time from CRI", a.Containers[0].CPU.Time.UnixNano(), criTS},
		{"a: runtime's zero rate is no rate", a.Containers[0].CPU.UsageNanoCores, (*uint64)(nil)},
		{"a: app working set", *a.Containers[0].Memory.WorkingSetBytes, uint64(400)},
		{"a: zero availableBytes dropped", a.Containers[0].Memory.AvailableBytes, (*uint64)(nil)},
		{"a: app start is container creation", a.Containers[0].StartTime.UnixNano(), criTS - int64(time.Hour) + 150},
		{"a: app rootfs used", *a.Containers[0].Rootfs.UsedBytes, uint64(8192)},
		{"a: app rootfs capacity from layer fs", *a.Containers[0].Rootfs.CapacityBytes, layerFs.Capacity},
		{"a: app logs used", *a.Containers[0].Logs.UsedBytes, appLogs},
		{"a: app logs inodes", *a.Containers[0].Logs.InodesUsed, uint64(2)},
		{"a: app logs capacity is nodefs", *a.Containers[0].Logs.CapacityBytes, nodeFs.Capacity},
		{"a: sidecar without log dir has no logs", a.Containers[1].Logs, (*statsapi.FsStats)(nil)},
		{"a: swap zero when the runtime has none", *a.Containers[0].Swap.SwapUsageBytes, uint64(0)},
		{"a: ephemeral used", *a.EphemeralStorage.UsedBytes, 2*8192 + appLogs + podLogs + etcHosts},
		{"a: ephemeral inodes", *a.EphemeralStorage.InodesUsed, uint64(2*5 + 2 + 1 + 1)},
		{"a: ephemeral capacity is nodefs", *a.EphemeralStorage.CapacityBytes, nodeFs.Capacity},
		{"a: no volume stats yet", a.VolumeStats, []statsapi.VolumeStats(nil)},
	}
	for _, c := range podChecks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	c := findPod(t, s, "c")
	sumChecks := []struct {
		name string
		got  any
		want any
	}{
		{"c: cpu summed over containers", *c.CPU.UsageCoreNanoSeconds, uint64(30)},
		{"c: no rate before a second reading", c.CPU.UsageNanoCores, (*uint64)(nil)},
		{"c: working set summed", *c.Memory.WorkingSetBytes, uint64(300)},
		{"c: usage summed", *c.Memory.UsageBytes, uint64(400)},
		{"c: no process count without a pod cgroup", c.ProcessStats, (*statsapi.ProcessStats)(nil)},
		{"c: network from netns", *c.Network.TxBytes, uint64(200)},
		{"c: ephemeral is writable layers only", *c.EphemeralStorage.UsedBytes, uint64(2 * 8192)},
	}
	for _, ch := range sumChecks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	e := findPod(t, s, "e")
	if e.Network != nil || *e.CPU.UsageCoreNanoSeconds != 30 {
		t.Errorf("e: pod without verbose status: network %v cpu %d", e.Network, *e.CPU.UsageCoreNanoSeconds)
	}
}

func TestSummaryOnlyCPUAndMemory(t *testing.T) {
	f := newFixture(t)
	f.images.err = errors.New("image service down") // not asked in this mode
	s, err := f.p.Summary(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.CPU == nil || s.Node.Memory == nil || s.Node.Swap == nil {
		t.Fatalf("node cpu/memory/swap missing: %+v", s.Node)
	}
	if s.Node.Fs != nil || s.Node.Runtime != nil || s.Node.Network != nil || s.Node.Rlimit != nil {
		t.Errorf("node has more than cpu and memory: %+v", s.Node)
	}
	if len(s.Node.SystemContainers) != 3 {
		t.Errorf("system containers = %d, want 3", len(s.Node.SystemContainers))
	}
	for _, p := range s.Pods {
		if p.CPU == nil || p.Memory == nil {
			t.Errorf("pod %s lacks cpu or memory", p.PodRef.Name)
		}
		if p.Network != nil || p.EphemeralStorage != nil || p.ProcessStats != nil || p.VolumeStats != nil {
			t.Errorf("pod %s has more than cpu and memory", p.PodRef.Name)
		}
		for _, c := range p.Containers {
			if c.CPU == nil || c.Memory == nil || c.Rootfs != nil || c.Logs != nil {
				t.Errorf("container %s/%s = %+v", p.PodRef.Name, c.Name, c)
			}
		}
	}
}

func TestSummaryRates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.p.Summary(ctx, true); err != nil {
		t.Fatal(err)
	}
	// Two seconds later: the node used 3 more core-seconds, pod a's cgroup
	// 1 core-second, container a1 half a core-second.
	f.clock.Step(2 * time.Second)
	writeTree(t, f.cgroupRoot, map[string]string{
		"cpuacct/cpuacct.usage":                           "7000000000\n",
		"cpuacct/kubepods/burstable/podu-1/cpuacct.usage": "1000001500\n",
	})
	f.rt.containerStats[1] = ctrStats("a1", "app", criTS+2e9, 1000+5e8, 400, 500, f.layerMount)
	s, err := f.p.Summary(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	a := findPod(t, s, "a")
	tests := []struct {
		name string
		got  *uint64
		want uint64
	}{
		{name: "node", got: s.Node.CPU.UsageNanoCores, want: 15e8},
		{name: "pod cgroup", got: a.CPU.UsageNanoCores, want: 5e8},
		{name: "container from CRI timestamps", got: a.Containers[0].CPU.UsageNanoCores, want: 25e7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got == nil || *tc.got != tc.want {
				t.Errorf("rate = %v, want %d", deref(tc.got), tc.want)
			}
		})
	}
}

func TestSummaryFromSandboxStats(t *testing.T) {
	tests := []struct {
		name           string
		sandboxStats   []*runtimeapi.PodSandboxStats
		err            error
		wantCPU        uint64
		wantNet        string
		wantProcs      *uint64
		wantListCalls  int
		wantStatusCall bool
	}{
		{
			name: "runtime answers: pod level from the CRI",
			sandboxStats: []*runtimeapi.PodSandboxStats{{
				Attributes: &runtimeapi.PodSandboxAttributes{Id: "sbA"},
				Linux: &runtimeapi.LinuxPodSandboxStats{
					Cpu:    &runtimeapi.CpuUsage{Timestamp: criTS, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 99999}},
					Memory: &runtimeapi.MemoryUsage{Timestamp: criTS, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 1234}, AvailableBytes: &runtimeapi.UInt64Value{Value: 100}},
					Network: &runtimeapi.NetworkUsage{Timestamp: criTS,
						DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth1", RxBytes: &runtimeapi.UInt64Value{Value: 7}},
						Interfaces:       []*runtimeapi.NetworkInterfaceUsage{{Name: "eth1", RxBytes: &runtimeapi.UInt64Value{Value: 7}}}},
					Process: &runtimeapi.ProcessUsage{Timestamp: criTS, ProcessCount: &runtimeapi.UInt64Value{Value: 9}},
				},
			}},
			wantCPU: 99999, wantNet: "eth1", wantProcs: u64(9), wantListCalls: 2,
		},
		{
			name: "Unimplemented is remembered and the host view used",
			err:  status.Error(codes.Unimplemented, "not implemented"), wantCPU: 1500, wantNet: "eth0", wantProcs: u64(4), wantListCalls: 1, wantStatusCall: true,
		},
		{
			name: "other failures fall back and are retried",
			err:  status.Error(codes.Unknown, "cgroupPath is empty"), wantCPU: 1500, wantNet: "eth0", wantProcs: u64(4), wantListCalls: 2, wantStatusCall: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.rt.sandboxStats, f.rt.sandboxStatsErr = tc.sandboxStats, tc.err
			var s *statsapi.Summary
			for range 2 {
				var err error
				if s, err = f.p.Summary(context.Background(), false); err != nil {
					t.Fatal(err)
				}
			}
			a := findPod(t, s, "a")
			if *a.CPU.UsageCoreNanoSeconds != tc.wantCPU || a.Network.Name != tc.wantNet || !reflect.DeepEqual(a.ProcessStats.ProcessCount, tc.wantProcs) {
				t.Errorf("pod a: cpu %d net %q procs %v", *a.CPU.UsageCoreNanoSeconds, a.Network.Name, deref(a.ProcessStats.ProcessCount))
			}
			if got := f.rt.callCount("ListPodSandboxStats"); got != tc.wantListCalls {
				t.Errorf("ListPodSandboxStats calls = %d, want %d", got, tc.wantListCalls)
			}
			// Verbose status is cached once known (a, c); e's lookup fails
			// and is retried on each of the two calls.
			if got := f.rt.callCount("PodSandboxStatus"); tc.wantStatusCall && got != 4 {
				t.Errorf("PodSandboxStatus calls = %d, want 4", got)
			}
		})
	}
}

func TestSummaryErrors(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f *fixture)
		only    bool
		wantErr string
	}{
		{name: "sandbox listing fails", breakIt: func(f *fixture) { f.rt.listErr = errors.New("boom") }, wantErr: "failed to list pod stats"},
		{name: "image fs fails", breakIt: func(f *fixture) { f.images.err = errors.New("boom") }, wantErr: "failed to get imageFs stats"},
		{name: "no image fs", breakIt: func(f *fixture) { f.images.resp = &runtimeapi.ImageFsInfoResponse{} }, wantErr: "imageFs information is unavailable"},
		{name: "nodefs missing", breakIt: func(f *fixture) { f.p.cfg.RootDir = filepath.Join(f.rootDir, "nope") }, wantErr: "failed to get rootFs stats"},
		{name: "procfs missing", breakIt: func(f *fixture) {
			f.p.host.Root, f.p.procRoot = filepath.Join(f.hostRoot, "nope"), filepath.Join(f.hostRoot, "nope", "proc")
		}, only: true, wantErr: "failed to get root cgroup stats"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.breakIt(f)
			_, err := f.p.Summary(context.Background(), tc.only)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestSummaryNoPods(t *testing.T) {
	f := newFixture(t)
	f.p.cfg.Pods = fakePods{}
	s, err := f.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pods == nil || len(s.Pods) != 0 {
		t.Errorf("pods = %#v, want an empty non-nil list", s.Pods)
	}
	if n := f.rt.callCount("ListContainerStats"); n != 0 {
		t.Errorf("ListContainerStats called %d times with no pods to report", n)
	}
}

func TestSummaryCgroupV2Node(t *testing.T) {
	f := newFixture(t)
	f.p.cgroups = detectCgroupLayout(cgroupV2Tree(t))
	s, err := f.p.Summary(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	// v2 has no memory.current at the root: usage is MemTotal-MemFree from
	// meminfo, the working set takes inactive_file from the root memory.stat.
	usage := uint64((memTotalKB - 400000) * 1024)
	tests := []struct {
		name      string
		got, want uint64
	}{
		{name: "cpu from root cpu.stat", got: *s.Node.CPU.UsageCoreNanoSeconds, want: 5000000000},
		{name: "usage from meminfo", got: *s.Node.Memory.UsageBytes, want: usage},
		{name: "working set", got: *s.Node.Memory.WorkingSetBytes, want: usage - 400},
		{name: "rss is anon", got: *s.Node.Memory.RSSBytes, want: 700},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %d, want %d", tc.got, tc.want)
			}
		})
	}
}

func TestRateOrRuntimes(t *testing.T) {
	tests := []struct {
		name     string
		ours     *uint64
		runtimes *runtimeapi.UInt64Value
		want     *uint64
	}{
		{name: "ours wins", ours: u64(5), runtimes: &runtimeapi.UInt64Value{Value: 9}, want: u64(5)},
		{name: "runtime's before ours is known", runtimes: &runtimeapi.UInt64Value{Value: 9}, want: u64(9)},
		{name: "runtime's zero is unknown", runtimes: &runtimeapi.UInt64Value{}, want: nil},
		{name: "nothing", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rateOrRuntimes(tc.ours, tc.runtimes); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", deref(got), deref(tc.want))
			}
		})
	}
}

func TestParseSandboxInfo(t *testing.T) {
	tests := []struct {
		name    string
		info    map[string]string
		want    sandboxInfo
		wantErr bool
	}{
		{name: "containerd info", info: map[string]string{"info": verboseInfo(19365, "/k8s.io/abc")}, want: sandboxInfo{Pid: 19365, CgroupsPath: "/k8s.io/abc"}},
		{name: "no info key", info: map[string]string{}, wantErr: true},
		{name: "bad json", info: map[string]string{"info": "{"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSandboxInfo(tc.info)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %+v, %v; want %+v, wantErr %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestSelectSandboxes(t *testing.T) {
	sbs := []*runtimeapi.PodSandbox{
		sandbox("old-ready", "ns", "p", "u1", true, 1),
		sandbox("new-ready", "ns", "p", "u1", true, 2),
		sandbox("newest-dead", "ns", "p", "u1", false, 3),
		sandbox("dead1", "ns", "q", "u2", false, 1),
		sandbox("dead2", "ns", "q", "u2", false, 2),
		sandbox("other", "ns", "r", "u3", true, 1),
		sandbox("no-uid", "ns", "s", "", true, 1),
	}
	tests := []struct {
		name string
		want map[string]bool
		ids  []string
	}{
		{name: "all pods", ids: []string{"dead2", "new-ready", "other"}},
		{name: "only desired", want: map[string]bool{"u1": true}, ids: []string{"new-ready"}},
		{name: "none desired", want: map[string]bool{}, ids: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := selectSandboxes(sbs, tc.want)
			var ids []string
			for _, id := range []string{"dead1", "dead2", "new-ready", "newest-dead", "no-uid", "old-ready", "other"} {
				if _, ok := got[id]; ok {
					ids = append(ids, id)
				}
			}
			if !reflect.DeepEqual(ids, tc.ids) {
				t.Errorf("got %v, want %v", ids, tc.ids)
			}
		})
	}
}

func TestSummaryConcurrentCallers(t *testing.T) {
	tests := []struct {
		name string
		only bool
	}{
		{name: "full"},
		{name: "cpu and memory", only: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			errs := make(chan error, 4)
			for range 4 {
				go func() {
					_, err := f.p.Summary(context.Background(), tc.only)
					errs <- err
				}()
			}
			for range 4 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}
