//go:build integration

package stats_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	// shmMiB is what each burner writes to /dev/shm: tmpfs pages charged to
	// its memory cgroup and never reclaimable as inactive file.
	shmMiB = 32
	// The burners are capped at half a core each, so the measured rate has
	// an upper bound and the shared machine keeps a core.
	cpuQuota, cpuPeriod = 50000, 100000
)

type podList []*v1.Pod

func (l podList) List() []*v1.Pod { return l }

// runBurner runs a pod whose one container ("burn") logs a line, fills
// /dev/shm and spins, capped at half a core. A non-empty cgroupParent puts
// the pod in a cgroup of its own, as the kubelet does with cgroups per QoS;
// empty leaves it where containerd puts it (/k8s.io/<id>).
func runBurner(t *testing.T, rs runtimeapi.RuntimeServiceClient, logsDir, cgroupParent string) (*v1.Pod, string) {
	t.Helper()
	cfg := framework.PodSandboxConfig(t, framework.UniqueName("stats"))
	md := cfg.Metadata
	cfg.LogDirectory = criconfig.PodLogDir(logsDir, md.Namespace, md.Name, types.UID(md.Uid))
	if cgroupParent != "" {
		cfg.Linux.CgroupParent = cgroupParent + "/pod" + md.Uid
		// Registered before the sandbox's own cleanup, so it runs after it.
		t.Cleanup(func() { removeCgroupDirs(t, cfg.Linux.CgroupParent, cgroupParent) })
	}
	sbID := framework.RunPodSandbox(t, rs, cfg)
	ctx := framework.Ctx(t)
	resp, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sbID, SandboxConfig: cfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "burn"},
			Image:    &runtimeapi.ImageSpec{Image: framework.BusyboxImage},
			Command: []string{"sh", "-c", "echo started; dd if=/dev/zero of=/dev/shm/fill bs=1M count=" +
				strconv.Itoa(shmMiB) + " 2>/dev/null; while :; do :; done"},
			LogPath: criconfig.ContainerLogPath("burn", 0),
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources: &runtimeapi.LinuxContainerResources{CpuQuota: cpuQuota, CpuPeriod: cpuPeriod},
			},
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	framework.CleanupContainer(t, rs, resp.ContainerId)
	if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = md.Name, md.Namespace, types.UID(md.Uid)
	return pod, sbID
}

// removeCgroupDirs removes the pod cgroup and its test parent from every
// hierarchy runc created them in.
func removeCgroupDirs(t *testing.T, dirs ...string) {
	hierarchies, err := filepath.Glob(filepath.Join(cgroupRoot, "*"))
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	hierarchies = append(hierarchies, cgroupRoot) // cgroup v2
	for _, h := range hierarchies {
		for _, d := range dirs {
			if err := os.Remove(filepath.Join(h, d)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("cleanup: %v", err)
			}
		}
	}
}

// procStatBusy is the node's CPU time in /proc/stat: busy (user, nice,
// system, irq, softirq) and steal, in nanoseconds.
func procStatBusy(t *testing.T) (busy, steal uint64) {
	t.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	tick := func(i int) uint64 {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v * uint64(10*time.Millisecond)
	}
	return tick(1) + tick(2) + tick(3) + tick(6) + tick(7), tick(8)
}

// meminfo returns MemTotal, MemFree, Inactive(file) and the kernel's own
// memory (slab, stacks, page tables: charged to no cgroup on v1) in bytes.
func meminfo(t *testing.T) (total, free, inactiveFile, kernel uint64) {
	t.Helper()
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	get := func(key string) uint64 {
		for _, l := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(l, key+":"); ok {
				v, err := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return v * 1024
			}
		}
		t.Fatalf("no %s in /proc/meminfo", key)
		return 0
	}
	return get("MemTotal"), get("MemFree"), get("Inactive(file)"),
		get("Slab") + get("KernelStack") + get("PageTables")
}

func within(got, want, tolerance uint64) bool {
	if got > want {
		return got-want <= tolerance
	}
	return want-got <= tolerance
}

func findPod(s *statsapi.Summary, uid types.UID) *statsapi.PodStats {
	for i := range s.Pods {
		if s.Pods[i].PodRef.UID == string(uid) {
			return &s.Pods[i]
		}
	}
	return nil
}

// TestSummaryAgainstContainerd runs two CPU-and-memory burners on the real
// runtime, one in a pod cgroup of its own and one where containerd puts
// sandboxes without a parent, and checks the Summary, its JSON and the
// resource metrics against them and against /proc.
func TestSummaryAgainstContainerd(t *testing.T) {
	rs, is := framework.NewCRIClient(t)
	logsDir := t.TempDir()
	parent := "/" + framework.UniqueName("seed-stats")
	withCgroup, _ := runBurner(t, rs, logsDir, parent)
	flat, _ := runBurner(t, rs, logsDir, "")

	p := stats.New(stats.Config{
		Runtime: rs, Images: is, Pods: podList{withCgroup, flat},
		NodeName: "stats-node", RootDir: t.TempDir(), PodLogsDir: logsDir,
	})
	srv := httptest.NewServer(p.SummaryHandler())
	t.Cleanup(srv.Close)
	get := func(query string) (*statsapi.Summary, error) {
		resp, err := http.Get(srv.URL + "/stats/summary" + query)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, errors.New(resp.Status)
		}
		dec := json.NewDecoder(resp.Body)
		dec.DisallowUnknownFields()
		var s statsapi.Summary
		if err := dec.Decode(&s); err != nil {
			return nil, err
		}
		return &s, nil
	}

	// Wait until both burners have filled their /dev/shm and a CPU rate
	// (which needs two readings a second apart) is known.
	var s *statsapi.Summary
	framework.Eventually(t, 60*time.Second, 1500*time.Millisecond, "both burners measured", func() (bool, error) {
		var err error
		if s, err = get(""); err != nil {
			return false, err
		}
		for _, pod := range []*v1.Pod{withCgroup, flat} {
			ps := findPod(s, pod.UID)
			if ps == nil || len(ps.Containers) != 1 {
				return false, errors.New("pod " + pod.Name + " not reported with its container")
			}
			c := ps.Containers[0]
			if c.CPU == nil || c.CPU.UsageNanoCores == nil || *c.CPU.UsageNanoCores == 0 || ps.CPU.UsageNanoCores == nil || *ps.CPU.UsageNanoCores == 0 {
				return false, errors.New("no CPU rate yet for " + pod.Name)
			}
			if c.Memory == nil || c.Memory.WorkingSetBytes == nil || *c.Memory.WorkingSetBytes < shmMiB<<20 {
				return false, errors.New("working set of " + pod.Name + " below the shm fill")
			}
		}
		return true, nil
	})

	if len(s.Pods) != 2 {
		t.Errorf("summary has %d pods, want only the 2 desired ones", len(s.Pods))
	}
	maxRate := uint64(float64(cpuQuota) / cpuPeriod * 1e9 * 1.2)
	for _, pod := range []*v1.Pod{withCgroup, flat} {
		ps := findPod(s, pod.UID)
		c := ps.Containers[0]
		t.Logf("%s: pod cpu %d nanocores, ws %d; container cpu %d nanocores, ws %d", pod.Name,
			*ps.CPU.UsageNanoCores, *ps.Memory.WorkingSetBytes, *c.CPU.UsageNanoCores, *c.Memory.WorkingSetBytes)
		if ps.PodRef.Name != pod.Name || ps.PodRef.Namespace != pod.Namespace {
			t.Errorf("podRef = %+v, want %s/%s", ps.PodRef, pod.Namespace, pod.Name)
		}
		if c.Name != "burn" || c.StartTime.IsZero() {
			t.Errorf("container = %q started %v", c.Name, c.StartTime)
		}
		if r := *c.CPU.UsageNanoCores; r > maxRate {
			t.Errorf("%s: container rate %d nanocores exceeds its %d quota", pod.Name, r, maxRate)
		}
		if ws := *ps.Memory.WorkingSetBytes; ws < shmMiB<<20 {
			t.Errorf("%s: pod working set %d below the %d MiB in shm", pod.Name, ws, shmMiB)
		}
		if *ps.CPU.UsageCoreNanoSeconds < *c.CPU.UsageCoreNanoSeconds {
			t.Errorf("%s: pod cpu %d below its container's %d", pod.Name, *ps.CPU.UsageCoreNanoSeconds, *c.CPU.UsageCoreNanoSeconds)
		}
		if ps.Network == nil || ps.Network.Name != "eth0" || ps.Network.RxBytes == nil {
			t.Errorf("%s: network = %+v, want the pod's eth0", pod.Name, ps.Network)
		}
		if c.Logs == nil || c.Logs.UsedBytes == nil || *c.Logs.UsedBytes == 0 {
			t.Errorf("%s: container logs = %+v, want the log file measured", pod.Name, c.Logs)
		}
		if c.Rootfs == nil || c.Rootfs.UsedBytes == nil || c.Rootfs.CapacityBytes == nil || *c.Rootfs.CapacityBytes == 0 {
			t.Errorf("%s: rootfs = %+v", pod.Name, c.Rootfs)
		}
		if ps.EphemeralStorage == nil || ps.EphemeralStorage.UsedBytes == nil || *ps.EphemeralStorage.UsedBytes < *c.Logs.UsedBytes {
			t.Errorf("%s: ephemeral storage = %+v", pod.Name, ps.EphemeralStorage)
		}
	}
	// Only the pod in its own cgroup has a process count (pids of its cgroup).
	if ps := findPod(s, withCgroup.UID); ps.ProcessStats == nil || ps.ProcessStats.ProcessCount == nil || *ps.ProcessStats.ProcessCount < 2 {
		t.Errorf("pod cgroup process count = %+v, want pause and the burner", ps.ProcessStats)
	}

	// Node CPU: the root cgroup's counter against /proc/stat. cpuacct
	// counts scheduler time at ns precision and may include some of what
	// /proc/stat's ticks call steal, so it lies between busy and busy+steal,
	// give or take sampling.
	n := s.Node
	busy, steal := procStatBusy(t)
	if u := *n.CPU.UsageCoreNanoSeconds; float64(u) < 0.9*float64(busy) || float64(u) > 1.1*float64(busy+steal) {
		t.Errorf("node cpu %d ns, /proc/stat busy %d steal %d", u, busy, steal)
	}
	if r := n.CPU.UsageNanoCores; r == nil || *r == 0 || *r > uint64(runtime.NumCPU())*11e8 {
		t.Errorf("node cpu rate = %v, want within (0, %d cores]", r, runtime.NumCPU())
	}
	// Node memory: the root cgroup's usage against /proc/meminfo less the
	// kernel's own memory (slab, stacks, page tables are charged to no
	// cgroup on v1; a busy build machine holds gigabytes of slab), within
	// 5% of the machine's memory.
	total, free, inactive, kernel := meminfo(t)
	tol := total / 20
	used := total - free - kernel
	if !within(*n.Memory.UsageBytes, used, tol) {
		t.Errorf("node memory usage %d, /proc/meminfo used less kernel %d (tolerance %d)", *n.Memory.UsageBytes, used, tol)
	}
	if !within(*n.Memory.WorkingSetBytes, used-inactive, tol) {
		t.Errorf("node working set %d, /proc/meminfo used less kernel and inactive file %d (tolerance %d)", *n.Memory.WorkingSetBytes, used-inactive, tol)
	}
	if *n.Memory.AvailableBytes+*n.Memory.WorkingSetBytes != total {
		t.Errorf("node available %d + working set %d != MemTotal %d", *n.Memory.AvailableBytes, *n.Memory.WorkingSetBytes, total)
	}
	if n.Fs == nil || *n.Fs.CapacityBytes == 0 || n.Runtime == nil || n.Runtime.ImageFs == nil ||
		n.Runtime.ImageFs.CapacityBytes == nil || *n.Runtime.ImageFs.CapacityBytes == 0 || *n.Runtime.ImageFs.UsedBytes == 0 {
		t.Errorf("node fs %+v runtime %+v", n.Fs, n.Runtime)
	}
	if n.Network == nil || len(n.Network.Interfaces) == 0 || n.Rlimit == nil || n.Rlimit.MaxPID == nil {
		t.Errorf("node network %+v rlimit %+v", n.Network, n.Rlimit)
	}

	// The CPU-and-memory subset over HTTP.
	only, err := get("?only_cpu_and_memory=true")
	if err != nil {
		t.Fatal(err)
	}
	if only.Node.Fs != nil || only.Node.Memory == nil || findPod(only, flat.UID) == nil || findPod(only, flat.UID).EphemeralStorage != nil {
		t.Errorf("only_cpu_and_memory summary = %+v", only.Node)
	}

	// The resource metrics name our container.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.ResourceMetricsCollector()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "container_cpu_usage_seconds_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pod"] == withCgroup.Name && labels["namespace"] == withCgroup.Namespace && labels["container"] == "burn" && m.GetCounter().GetValue() > 0 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("container_cpu_usage_seconds_total has no positive sample for %s/burn", withCgroup.Name)
	}
}

// TestNodeStatsAgainstKernel checks the node figures eviction and node
// capacity rely on against what the kernel reports: nodefs from statfs of
// the root dir, imagefs from statfs of the runtime's image mountpoint,
// the task limit from /proc/sys/kernel, and the machine's memory and
// ephemeral storage capacity.
func TestNodeStatsAgainstKernel(t *testing.T) {
	rs, is := framework.NewCRIClient(t)
	root := t.TempDir()
	p := stats.New(stats.Config{Runtime: rs, Images: is, Pods: podList{}, NodeName: "stats-node", RootDir: root})
	s, err := p.Summary(framework.Ctx(t), false)
	if err != nil {
		t.Fatal(err)
	}
	statfs := func(path string) (capacity, avail, inodes, inodesFree uint64) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), st.Files, st.Ffree
	}
	checkFs := func(name string, fs *statsapi.FsStats, path string) {
		t.Helper()
		capacity, avail, inodes, free := statfs(path)
		if fs == nil || fs.CapacityBytes == nil || fs.AvailableBytes == nil || fs.Inodes == nil || fs.InodesFree == nil {
			t.Fatalf("%s: %+v", name, fs)
		}
		// Others write to the disk meanwhile: 2% of its size, 2% of inodes.
		if *fs.CapacityBytes != capacity || !within(*fs.AvailableBytes, avail, capacity/50) ||
			*fs.Inodes != inodes || !within(*fs.InodesFree, free, inodes/50+10) {
			t.Errorf("%s: capacity %d avail %d inodes %d free %d; statfs(%s) %d %d %d %d", name,
				*fs.CapacityBytes, *fs.AvailableBytes, *fs.Inodes, *fs.InodesFree, path, capacity, avail, inodes, free)
		}
	}
	checkFs("nodefs", s.Node.Fs, root)
	fsInfo, err := is.ImageFsInfo(framework.Ctx(t), &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fsInfo.ImageFilesystems) == 0 {
		t.Fatalf("ImageFsInfo: %v %v", fsInfo, err)
	}
	mp := fsInfo.ImageFilesystems[0].FsId.Mountpoint
	checkFs("imagefs", s.Node.Runtime.ImageFs, mp)
	if used := fsInfo.ImageFilesystems[0].UsedBytes.GetValue(); *s.Node.Runtime.ImageFs.UsedBytes != used {
		t.Errorf("imagefs used %d, CRI says %d", *s.Node.Runtime.ImageFs.UsedBytes, used)
	}

	// The task limit is the smaller of pid_max and threads-max.
	readInt := func(path string) int64 {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	maxPID := min(readInt("/proc/sys/kernel/pid_max"), readInt("/proc/sys/kernel/threads-max"))
	if r := s.Node.Rlimit; r == nil || r.MaxPID == nil || *r.MaxPID != maxPID || r.NumOfRunningProcesses == nil || *r.NumOfRunningProcesses <= 0 {
		t.Errorf("rlimit %+v, want maxpid %d and a task count", r, maxPID)
	} else {
		var si syscall.Sysinfo_t
		if err := syscall.Sysinfo(&si); err != nil {
			t.Fatal(err)
		}
		// Tasks come and go: within 10% (and 50) of sysinfo's count.
		if n, procs := *r.NumOfRunningProcesses, int64(si.Procs); !within(uint64(n), uint64(procs), uint64(procs/10+50)) {
			t.Errorf("tasks %d, sysinfo %d", n, procs)
		}
	}

	// Memory: capacity (available + working set) is MemTotal, as node
	// capacity reports it.
	total, _, _, _ := meminfo(t)
	m := s.Node.Memory
	if *m.AvailableBytes+*m.WorkingSetBytes != total {
		t.Errorf("memory available %d + working set %d != MemTotal %d", *m.AvailableBytes, *m.WorkingSetBytes, total)
	}
	mi, err := hostinfo.LocalHost().Machine(root)
	if err != nil {
		t.Fatal(err)
	}
	capacity, _, _, _ := statfs(root)
	var st syscall.Statfs_t
	syscall.Statfs(root, &st)
	if uint64(mi.MemoryCapacity) != total || uint64(mi.EphemeralStorageCapacity) != st.Blocks*uint64(st.Frsize) ||
		!within(uint64(mi.EphemeralStorageCapacity), capacity, capacity/100) {
		t.Errorf("machine info memory %d ephemeral storage %d; MemTotal %d, statfs %d", mi.MemoryCapacity, mi.EphemeralStorageCapacity, total, capacity)
	}
	t.Logf("nodefs %d/%d bytes, imagefs %s %d/%d, maxPID %d, tasks %d, memory available %d of %d",
		*s.Node.Fs.AvailableBytes, *s.Node.Fs.CapacityBytes, mp, *s.Node.Runtime.ImageFs.AvailableBytes, *s.Node.Runtime.ImageFs.CapacityBytes,
		*s.Node.Rlimit.MaxPID, *s.Node.Rlimit.NumOfRunningProcesses, *m.AvailableBytes, total)
}
