package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// sandboxInfo is what a verbose PodSandboxStatus tells that the stats need
// and that does not change over the sandbox's life.
type sandboxInfo struct {
	// Pid is the sandbox (pause) process, whose network namespace is the pod's.
	Pid int
	// CgroupsPath is the sandbox's OCI cgroupsPath.
	CgroupsPath string
}

// parseSandboxInfo reads the "info" JSON of a verbose PodSandboxStatus, as
// containerd writes it.
func parseSandboxInfo(info map[string]string) (sandboxInfo, error) {
	raw, ok := info["info"]
	if !ok {
		return sandboxInfo{}, fmt.Errorf("no verbose info")
	}
	var v struct {
		Pid         int `json:"pid"`
		RuntimeSpec struct {
			Linux struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return sandboxInfo{}, fmt.Errorf("verbose info: %w", err)
	}
	return sandboxInfo{Pid: v.Pid, CgroupsPath: v.RuntimeSpec.Linux.CgroupsPath}, nil
}

// desiredPods is the pods to report by UID, nil for all.
func desiredPods(pods Pods) map[string]*v1.Pod {
	if pods == nil {
		return nil
	}
	out := map[string]*v1.Pod{}
	for _, p := range pods.List() {
		out[string(p.UID)] = p
	}
	return out
}

// uidSet is the key set of pods, nil for nil.
func uidSet(pods map[string]*v1.Pod) map[string]bool {
	if pods == nil {
		return nil
	}
	out := make(map[string]bool, len(pods))
	for uid := range pods {
		out[uid] = true
	}
	return out
}

// selectSandboxes picks one sandbox per wanted pod UID: the newest ready
// one, else the newest. want nil accepts every UID.
func selectSandboxes(sbs []*runtimeapi.PodSandbox, want map[string]bool) map[string]*runtimeapi.PodSandbox {
	byUID := map[string]*runtimeapi.PodSandbox{}
	for _, sb := range sbs {
		uid := sb.GetMetadata().GetUid()
		if uid == "" || (want != nil && !want[uid]) {
			continue
		}
		cur, ok := byUID[uid]
		if !ok || betterSandbox(sb, cur) {
			byUID[uid] = sb
		}
	}
	out := make(map[string]*runtimeapi.PodSandbox, len(byUID))
	for _, sb := range byUID {
		out[sb.GetId()] = sb
	}
	return out
}

func betterSandbox(a, b *runtimeapi.PodSandbox) bool {
	ar, br := a.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY, b.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
	if ar != br {
		return ar
	}
	return a.GetCreatedAt() > b.GetCreatedAt()
}

// runningContainers groups the running containers of the chosen sandboxes
// by sandbox ID; exited ones are not reported (upstream drops them too).
func runningContainers(ctrs []*runtimeapi.Container, chosen map[string]*runtimeapi.PodSandbox) map[string][]*runtimeapi.Container {
	out := map[string][]*runtimeapi.Container{}
	for _, c := range ctrs {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if _, ok := chosen[c.GetPodSandboxId()]; ok {
			out[c.GetPodSandboxId()] = append(out[c.GetPodSandboxId()], c)
		}
	}
	return out
}

// podStats gathers and assembles the stats of the desired pods that have a
// running container. nodeFs nil means CPU and memory only.
func (p *Provider) podStats(ctx context.Context, now time.Time, nodeFs *fsInfo) ([]statsapi.PodStats, error) {
	logger := klog.FromContext(ctx)
	sbResp, err := p.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("failed to list all pod sandboxes: %w", err)
	}
	ctrResp, err := p.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("failed to list all containers: %w", err)
	}
	specs := desiredPods(p.cfg.Pods)
	chosen := selectSandboxes(sbResp.GetItems(), uidSet(specs))
	running := runningContainers(ctrResp.GetContainers(), chosen)
	out := make([]statsapi.PodStats, 0, len(running))
	measured := map[string]bool{} // volume paths of the reported pods
	if len(running) == 0 {
		p.keepSandboxInfo(nil)
		p.keepVolumes(nodeFs != nil, measured)
		return out, nil
	}

	csResp, err := p.cfg.Runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil {
		return nil, fmt.Errorf("failed to list all container stats: %w", err)
	}
	ctrStats := make(map[string]*runtimeapi.ContainerStats, len(csResp.GetStats()))
	for _, s := range csResp.GetStats() {
		ctrStats[s.GetAttributes().GetId()] = s
	}
	sbStats := p.listSandboxStats(ctx)

	fsCache := map[string]*fsInfo{}
	for sbID, ctrs := range running {
		sb := chosen[sbID]
		in := podInput{Sandbox: sb}
		for _, c := range ctrs {
			s, ok := ctrStats[c.GetId()]
			if !ok {
				logger.V(4).Info("No CRI stats for running container", "containerID", c.GetId())
				continue
			}
			ci := containerInput{Container: c, Stats: s, UsageNanoCores: p.containerRate(s, now)}
			if nodeFs != nil {
				ci.RootfsFs = p.fsOf(ctx, s.GetWritableLayer().GetFsId().GetMountpoint(), fsCache)
				ci.Logs = p.logUsage(ctx, sb, c.GetMetadata().GetName())
			}
			in.Containers = append(in.Containers, ci)
		}
		if len(in.Containers) == 0 {
			continue
		}
		if ss, ok := sbStats[sbID]; ok && ss.GetLinux() != nil {
			p.podLevelFromCRI(&in, ss.GetLinux(), now, nodeFs != nil)
		} else {
			p.podLevelFromHost(ctx, &in, now, nodeFs != nil)
		}
		if nodeFs != nil {
			in.PodLogs = p.logUsage(ctx, sb, "")
			if u, ok := fileUsage(filepath.Join(p.cfg.RootDir, "pods", sb.GetMetadata().GetUid(), "etc-hosts")); ok {
				in.EtcHosts = &u
			}
			in.Volumes = p.podVolumes(specs[sb.GetMetadata().GetUid()], measured)
		}
		out = append(out, assemblePod(in, nodeFs, now))
	}
	p.keepSandboxInfo(func(id string) bool { _, ok := chosen[id]; return ok })
	p.keepVolumes(nodeFs != nil, measured)
	sortPods(out)
	return out, nil
}

// podVolumes returns the last samples of the pod's volumes, renewing
// those that are due in the background, and marks their paths measured.
// Nothing without the pod's spec or with volume stats disabled.
func (p *Provider) podVolumes(pod *v1.Pod, measured map[string]bool) []volumeInput {
	if pod == nil || p.volumes == nil {
		return nil
	}
	var out []volumeInput
	for _, v := range reportedVolumes(pod, filepath.Join(p.cfg.RootDir, "pods")) {
		measured[v.Path] = true
		if s, ok := p.volumes.get(v.Path); ok {
			out = append(out, volumeInput{Name: v.Name, Local: v.Local, Sample: s})
		}
	}
	if p.cfg.PluginVolumes == nil {
		return out
	}
	for _, v := range p.cfg.PluginVolumes(pod) {
		measured[v.Path] = true
		measure := v.Measure
		s, ok := p.volumes.getWith(v.Path, func(string) (volumeSample, error) {
			u, err := measure()
			return u.sample(), err
		})
		if ok {
			out = append(out, volumeInput{Name: v.Name, PVC: v.PVC, Sample: s})
		}
	}
	return out
}

// keepVolumes forgets the samples of volumes no longer reported, after a
// full Summary (a CPU-and-memory one looks at no volume).
func (p *Provider) keepVolumes(full bool, measured map[string]bool) {
	if full && p.volumes != nil {
		p.volumes.keep(measured)
	}
}

// listSandboxStats asks the runtime for pod-level stats. Any failure
// (containerd 1.6 fails the whole list when one sandbox has no cgroup
// parent) falls back to the host's view; Unimplemented is remembered.
func (p *Provider) listSandboxStats(ctx context.Context) map[string]*runtimeapi.PodSandboxStats {
	if p.sandboxStatsUnsupported.Load() {
		return nil
	}
	resp, err := p.cfg.Runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			p.sandboxStatsUnsupported.Store(true)
		}
		klog.FromContext(ctx).V(4).Info("ListPodSandboxStats failed, pod stats come from cgroups and container stats", "err", err)
		return nil
	}
	out := make(map[string]*runtimeapi.PodSandboxStats, len(resp.GetStats()))
	for _, s := range resp.GetStats() {
		out[s.GetAttributes().GetId()] = s
	}
	return out
}

// containerRate is the container's CPU rate: ours from the kept reading,
// or, before we have one, the runtime's own when it computed one
// (containerd 2.x does; 1.6 always sends zero, which would read as idle).
func (p *Provider) containerRate(s *runtimeapi.ContainerStats, now time.Time) *uint64 {
	cpu := s.GetCpu()
	var rate *uint64
	if cpu.GetUsageCoreNanoSeconds() != nil {
		rate = p.rates.observe("ctr/"+s.GetAttributes().GetId(), cpuSample{At: sampleTime(cpu.GetTimestamp(), now), Nanos: cpu.GetUsageCoreNanoSeconds().GetValue()}, now)
	}
	return rateOrRuntimes(rate, cpu.GetUsageNanoCores())
}

// rateOrRuntimes is our rate, else a non-zero rate the runtime computed.
func rateOrRuntimes(ours *uint64, runtimes *runtimeapi.UInt64Value) *uint64 {
	if ours != nil {
		return ours
	}
	if runtimes.GetValue() > 0 {
		return u64(runtimes.GetValue())
	}
	return nil
}

// podLevelFromCRI takes the pod's CPU, memory, network and process count
// from the runtime's sandbox stats.
func (p *Provider) podLevelFromCRI(in *podInput, ls *runtimeapi.LinuxPodSandboxStats, now time.Time, full bool) {
	if cpu := ls.GetCpu(); cpu != nil && cpu.GetUsageCoreNanoSeconds() != nil {
		t := sampleTime(cpu.GetTimestamp(), now)
		rate := rateOrRuntimes(p.rates.observe("podcri/"+in.Sandbox.GetId(), cpuSample{At: t, Nanos: cpu.GetUsageCoreNanoSeconds().GetValue()}, now), cpu.GetUsageNanoCores())
		in.CPU = cpuStats(u64(cpu.GetUsageCoreNanoSeconds().GetValue()), rate, t)
	}
	if m := ls.GetMemory(); m != nil {
		in.Memory = criMemory(m, now)
	}
	if !full {
		return
	}
	if n := ls.GetNetwork(); n != nil {
		in.Network = criNetwork(n, now)
	}
	if pc := ls.GetProcess().GetProcessCount(); pc != nil {
		in.ProcessCount = u64(pc.GetValue())
	}
}

// podLevelFromHost reads the pod's cgroup (when the sandbox sits in one of
// its own) and the pod's network namespace through the sandbox process.
func (p *Provider) podLevelFromHost(ctx context.Context, in *podInput, now time.Time, full bool) {
	info, ok := p.sandboxInfo(ctx, in.Sandbox.GetId())
	if !ok {
		return
	}
	if cg, ok := podCgroupOf(info.CgroupsPath, in.Sandbox.GetMetadata().GetUid()); ok {
		if s, err := p.cgroups.read(cg); err == nil {
			if s.CPUNanos != nil {
				rate := p.rates.observe("podcg/"+in.Sandbox.GetId(), cpuSample{At: now, Nanos: *s.CPUNanos}, now)
				in.CPU = cpuStats(s.CPUNanos, rate, now)
			}
			in.Memory = memoryStats(s, 0, now)
			if full {
				in.ProcessCount = copyPtr(s.Pids)
			}
		} else {
			klog.FromContext(ctx).V(4).Info("Pod cgroup unreadable", "cgroup", cg, "err", err)
		}
	}
	if !full || info.Pid <= 0 {
		return
	}
	data, err := os.ReadFile(filepath.Join(p.procRoot, strconv.Itoa(info.Pid), "net", "dev"))
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Pod network unreadable", "pod", klog.KRef(in.Sandbox.GetMetadata().GetNamespace(), in.Sandbox.GetMetadata().GetName()), "err", err)
		return
	}
	if devs, err := parseNetDev(data); err == nil {
		in.Network = networkStats(devs, "", now)
	}
}

// sandboxInfo returns the cached verbose status of a sandbox, asking the
// runtime the first time.
func (p *Provider) sandboxInfo(ctx context.Context, id string) (sandboxInfo, bool) {
	p.mu.Lock()
	info, ok := p.sandboxes[id]
	p.mu.Unlock()
	if ok {
		return info, true
	}
	resp, err := p.cfg.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		klog.FromContext(ctx).V(4).Info("PodSandboxStatus failed", "podSandboxID", id, "err", err)
		return sandboxInfo{}, false
	}
	info, err = parseSandboxInfo(resp.GetInfo())
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Sandbox verbose info unusable", "podSandboxID", id, "err", err)
		return sandboxInfo{}, false
	}
	p.mu.Lock()
	p.sandboxes[id] = info
	p.mu.Unlock()
	return info, true
}

// keepSandboxInfo forgets the cached info of sandboxes no longer reported.
// reported names those still reported; nil forgets them all.
func (p *Provider) keepSandboxInfo(reported func(id string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.sandboxes {
		if reported == nil || !reported(id) {
			delete(p.sandboxes, id)
		}
	}
}

// fsOf sizes the filesystem at mountpoint once per Summary.
func (p *Provider) fsOf(ctx context.Context, mountpoint string, cache map[string]*fsInfo) *fsInfo {
	if mountpoint == "" {
		return nil
	}
	if fi, ok := cache[mountpoint]; ok {
		return fi
	}
	var res *fsInfo
	if fi, err := statFS(mountpoint); err == nil {
		res = &fi
	} else {
		klog.FromContext(ctx).V(2).Info("Cannot size a writable layer filesystem", "mountpoint", mountpoint, "err", err)
	}
	cache[mountpoint] = res
	return res
}

// logUsage measures a container's log directory, or with container "" the
// files directly in the pod's log directory; nil when it does not exist.
func (p *Provider) logUsage(ctx context.Context, sb *runtimeapi.PodSandbox, container string) *diskUsage {
	md := sb.GetMetadata()
	dir := criconfig.PodLogDir(p.cfg.PodLogsDir, md.GetNamespace(), md.GetName(), types.UID(md.GetUid()))
	if container != "" {
		dir = filepath.Join(dir, container)
	}
	u, ok, err := filesUsage(dir)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot measure logs", "dir", dir, "err", err)
	}
	if !ok {
		return nil
	}
	return &u
}

// sampleTime is a CRI timestamp, or now when the runtime gave none.
func sampleTime(unixNanos int64, now time.Time) time.Time {
	if unixNanos <= 0 {
		return now
	}
	return time.Unix(0, unixNanos)
}
