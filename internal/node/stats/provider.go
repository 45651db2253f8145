package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// Rate windows: a CPU reading replaces the kept one only after
// minRateInterval, and entities unseen for maxRateIdle are forgotten.
const (
	minRateInterval = time.Second
	maxRateIdle     = 10 * time.Minute
)

// Pods is the kubelet's pod manager: the desired pods, static pods included.
type Pods interface {
	List() []*v1.Pod
}

// Config is what New needs.
type Config struct {
	// Runtime and Images are the CRI services.
	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient
	// Pods limits pod stats to these pods; nil reports every sandbox that
	// carries a pod UID.
	Pods Pods
	// NodeName is reported as node.nodeName.
	NodeName string
	// RootDir is the kubelet root directory (default /var/lib/kubelet); its
	// filesystem is the nodefs.
	RootDir string
	// PodLogsDir holds <namespace>_<name>_<uid>/<container>/N.log.
	PodLogsDir string
	// Clock times readings and CPU rates; nil means the real clock.
	Clock clock.Clock
	// Cgroups is the cgroup layout (hostinfo); the zero value means the
	// local machine's, found at start. v1 (one directory per controller)
	// and v2 (unified) layouts are both read.
	Cgroups hostinfo.Cgroups
	// VolumeStatsAggPeriod is how often, at least, each pod volume's disk
	// usage is measured (a further random fraction of it is added, as
	// upstream jitters); zero or negative reports no volume stats, as
	// upstream's volumeStatsAggPeriod disables them. Volumes are known
	// only through Pods.
	VolumeStatsAggPeriod time.Duration
	// NodeAllocatableCgroup is the cgroup holding the pods (the upstream
	// kubelet's node allocatable root, e.g. /kubepods); it and its QoS
	// children are exported on /metrics/cadvisor. Empty (cgroupsPerQOS
	// off) exports only the root and the pods' own cgroups.
	NodeAllocatableCgroup string
	// Machine describes the machine for /metrics/cadvisor.
	Machine Machine
	// PluginVolumes lists a pod's volumes that plugins measure (claims'
	// CSI and local volumes, CSI inline volumes); nil reports none.
	PluginVolumes func(pod *v1.Pod) []PluginVolume
	// RecentPods returns the runtime's pods as last listed if that listing
	// is at most maxAge old (pleg.PLEG.Recent): a /metrics/cadvisor scrape
	// shares the PLEG's relist instead of listing the runtime again. nil,
	// or no listing that fresh, lists the runtime.
	RecentPods func(maxAge time.Duration) ([]*kuberuntime.RunningPod, bool)
	// ShowHiddenMetrics also exposes scrape_error, deprecated since 1.29 and
	// hidden by upstream v1.36 unless --show-hidden-metrics-for-version is set.
	ShowHiddenMetrics bool
}

// Provider computes the Summary API and the resource metrics.
type Provider struct {
	cfg   Config
	clock clock.Clock
	// host answers meminfo, pid limits and process cgroups; procRoot is its
	// /proc, for the per-scrape counters read here.
	host     hostinfo.Host
	procRoot string
	cgroups  cgroupLayout
	created  time.Time
	rates    *cpuRates
	// volumes caches pod volume usage; nil when volume stats are disabled.
	volumes *volumeCache

	// sandboxStatsUnsupported is set once ListPodSandboxStats answered
	// Unimplemented, so it is not asked again.
	sandboxStatsUnsupported atomic.Bool

	// cadvisor keeps what /metrics/cadvisor reuses between scrapes.
	cadvisor cadvisorState

	mu         sync.Mutex
	sandboxes  map[string]sandboxInfo // verbose sandbox status, by sandbox ID
	runtimePID int                    // last pid found for the runtime daemon
}

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RootDir == "" {
		cfg.RootDir = "/var/lib/kubelet"
	}
	host := hostinfo.LocalHost()
	if cfg.Cgroups.Root == "" {
		layout, err := host.Cgroups(hostinfo.DefaultCgroupRoot)
		if err != nil {
			klog.InfoS("No cgroups found; stats come from procfs and the runtime only", "err", err)
			layout.Root = hostinfo.DefaultCgroupRoot
		}
		cfg.Cgroups = layout
	}
	var volumes *volumeCache
	if cfg.VolumeStatsAggPeriod > 0 {
		volumes = newVolumeCache(volumeCacheConfig{Clock: cfg.Clock, Period: cfg.VolumeStatsAggPeriod})
	}
	return &Provider{
		volumes:   volumes,
		cfg:       cfg,
		clock:     cfg.Clock,
		host:      host,
		procRoot:  "/proc",
		cgroups:   cgroupLayout(cfg.Cgroups),
		created:   cfg.Clock.Now(),
		rates:     newCPURates(minRateInterval, maxRateIdle),
		sandboxes: map[string]sandboxInfo{},
		cadvisor:  cadvisorState{files: newFileCache()},
	}
}

// Summary returns the node and pod stats. With onlyCPUAndMemory it reads
// only what CPU and memory need, as upstream's GetCPUAndMemoryStats: no
// filesystems, network or rlimit. Each call also advances the CPU rates.
func (p *Provider) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error) {
	now := p.clock.Now()
	var nodeFs *fsInfo
	if !onlyCPUAndMemory {
		fi, err := statFS(p.cfg.RootDir)
		if err != nil {
			return nil, fmt.Errorf("failed to get rootFs stats: %w", err)
		}
		nodeFs = &fi
	}
	node, err := p.nodeStats(ctx, now, nodeFs)
	if err != nil {
		return nil, err
	}
	pods, err := p.podStats(ctx, now, nodeFs)
	if err != nil {
		return nil, fmt.Errorf("failed to list pod stats: %w", err)
	}
	node.SystemContainers = p.systemContainers(ctx, now)
	p.rates.prune(now)
	return &statsapi.Summary{Node: *node, Pods: pods}, nil
}

// nodeStats reads the root cgroup and procfs; nodeFs nil means CPU and
// memory only.
func (p *Provider) nodeStats(ctx context.Context, now time.Time, nodeFs *fsInfo) (*statsapi.NodeStats, error) {
	statData, err := os.ReadFile(filepath.Join(p.procRoot, "stat"))
	if err != nil {
		return nil, fmt.Errorf("failed to get root cgroup stats: %w", err)
	}
	ps, err := parseProcStat(statData)
	if err != nil {
		return nil, fmt.Errorf("failed to get root cgroup stats: %w", err)
	}
	meminfo, err := p.host.Meminfo()
	if err != nil {
		return nil, fmt.Errorf("failed to get root cgroup stats: %w", err)
	}
	root, err := p.cgroups.read("/")
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Root cgroup unreadable, using procfs for node stats", "cgroupRoot", p.cgroups.Root, "err", err)
	}
	cpuNanos := ps.BusyNanos
	if root.CPUNanos != nil {
		cpuNanos = *root.CPUNanos
	}
	rate := p.rates.observe("node", cpuSample{At: now, Nanos: cpuNanos}, now)

	node := &statsapi.NodeStats{
		NodeName:  p.cfg.NodeName,
		StartTime: metav1.NewTime(ps.BootTime),
		CPU:       cpuStats(&cpuNanos, rate, now),
		Memory:    nodeMemory(root, meminfo, now),
		Swap:      nodeSwap(meminfo, now),
	}
	if nodeFs == nil {
		return node, nil
	}
	node.Fs = nodeFs.fsStats(now)
	node.Network = p.hostNetwork(ctx, now)
	node.Rlimit = p.rlimit(now)
	imageFs, err := p.imageFsStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to get imageFs stats: %w", err)
	}
	node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}
	return node, nil
}

// nodeMemory is the node's memory from the root cgroup, with
// /proc/meminfo standing in for what the root cgroup lacks (cgroup v2 has
// no memory.current at the root).
func nodeMemory(root cgroupSample, meminfo hostinfo.Memory, t time.Time) *statsapi.MemoryStats {
	s := root
	if s.MemUsage == nil {
		total, free := meminfo.MemTotal, meminfo.MemFree
		s.MemUsage = u64(total - min(free, total))
		if s.InactiveFile == nil {
			s.InactiveFile = copyPtr(meminfo.InactiveFile)
		}
		if s.RSS == nil {
			s.RSS = copyPtr(meminfo.AnonPages)
		}
	}
	s.MemLimit = nil // the node is bounded by its capacity
	return memoryStats(s, meminfo.MemTotal, t)
}

// nodeSwap is swap in use and free from /proc/meminfo.
func nodeSwap(meminfo hostinfo.Memory, t time.Time) *statsapi.SwapStats {
	total, free := meminfo.SwapTotal, meminfo.SwapFree
	return &statsapi.SwapStats{
		Time:               metav1.NewTime(t),
		SwapUsageBytes:     u64(total - min(free, total)),
		SwapAvailableBytes: u64(free),
	}
}

// hostNetwork reads the kubelet's own (the host's) network namespace.
func (p *Provider) hostNetwork(ctx context.Context, now time.Time) *statsapi.NetworkStats {
	data, err := os.ReadFile(filepath.Join(p.procRoot, "net", "dev"))
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot read node network stats", "err", err)
		return nil
	}
	devs, err := parseNetDev(data)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot parse node network stats", "err", err)
		return nil
	}
	route, _ := os.ReadFile(filepath.Join(p.procRoot, "net", "route"))
	return networkStats(devs, parseDefaultRoute(route), now)
}

// rlimit is the task limit (the smaller of pid_max and threads-max) and
// the task count.
func (p *Provider) rlimit(now time.Time) *statsapi.RlimitStats {
	r := &statsapi.RlimitStats{Time: metav1.NewTime(now)}
	if v := p.host.MaxPIDs(); v > 0 {
		r.MaxPID = &v
	}
	if data, err := os.ReadFile(filepath.Join(p.procRoot, "loadavg")); err == nil {
		if n, err := parseLoadavgTasks(data); err == nil {
			r.NumOfRunningProcesses = &n
		}
	}
	return r
}

// imageFsStats is the runtime's first image filesystem: its usage from
// the CRI, its size from statfs of its mountpoint (containerd reports no
// capacity). The container filesystem is reported as the same one.
func (p *Provider) imageFsStats(ctx context.Context) (*statsapi.FsStats, error) {
	resp, err := p.cfg.Images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, err
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return nil, fmt.Errorf("imageFs information is unavailable")
	}
	fs := resp.GetImageFilesystems()[0]
	out := &statsapi.FsStats{Time: metav1.NewTime(time.Unix(0, fs.GetTimestamp()))}
	if fs.GetUsedBytes() != nil {
		out.UsedBytes = u64(fs.GetUsedBytes().GetValue())
	}
	if fs.GetInodesUsed() != nil {
		out.InodesUsed = u64(fs.GetInodesUsed().GetValue())
	}
	if mp := fs.GetFsId().GetMountpoint(); mp != "" {
		if fi, err := statFS(mp); err == nil {
			out.CapacityBytes, out.AvailableBytes = u64(fi.Capacity), u64(fi.Available)
			out.Inodes, out.InodesFree = u64(fi.Inodes), u64(fi.InodesFree)
		} else {
			klog.FromContext(ctx).V(2).Info("Cannot size the image filesystem", "mountpoint", mp, "err", err)
		}
	}
	return out, nil
}
