package stats

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// runtimeDaemon is the process name whose cgroup is reported as the
// "runtime" system container.
const runtimeDaemon = "containerd"

// systemContainers reports the kubelet's and the runtime's cgroups (when
// each has one of its own, not the root) and the cgroup of all pods (when
// it exists), with CPU and memory.
func (p *Provider) systemContainers(ctx context.Context, now time.Time) []statsapi.ContainerStats {
	type sys struct {
		name, cgroup string
		start        time.Time
	}
	var want []sys
	if cg, ok := p.processCgroup(os.Getpid()); ok {
		want = append(want, sys{statsapi.SystemContainerKubelet, cg, p.created})
	}
	if pid := p.findRuntimePID(); pid > 0 {
		if cg, ok := p.processCgroup(pid); ok {
			want = append(want, sys{name: statsapi.SystemContainerRuntime, cgroup: cg})
		}
	}
	if cg, ok := p.cgroups.podsCgroup(); ok {
		want = append(want, sys{name: statsapi.SystemContainerPods, cgroup: cg})
	}
	var out []statsapi.ContainerStats
	for _, w := range want {
		s, err := p.cgroups.read(w.cgroup)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Cannot read system container", "name", w.name, "cgroup", w.cgroup, "err", err)
			continue
		}
		out = append(out, systemContainer(w.name, w.start, s, p.rates.observe("sys/"+w.name+w.cgroup, cpuSample{At: now, Nanos: deref(s.CPUNanos)}, now), now))
	}
	return out
}

// systemContainer builds a system container's stats from its cgroup; a
// zero start means the cgroup's creation.
func systemContainer(name string, start time.Time, s cgroupSample, rate *uint64, now time.Time) statsapi.ContainerStats {
	if start.IsZero() {
		start = s.Created
	}
	return statsapi.ContainerStats{
		Name:      name,
		StartTime: metav1.NewTime(start),
		CPU:       cpuStats(s.CPUNanos, rate, now),
		Memory:    memoryStats(s, 0, now),
	}
}

// processCgroup is the accounting cgroup of /proc/<pid>, if it has one
// below the root.
func (p *Provider) processCgroup(pid int) (string, bool) {
	cgs, err := p.host.ProcessCgroups(pid)
	if err != nil {
		return "", false
	}
	return accountingCgroup(cgs, p.cgroups.Unified)
}

// findRuntimePID returns the runtime daemon's pid, checking the last one
// found before scanning /proc again; 0 when it is not running here.
func (p *Provider) findRuntimePID() int {
	p.mu.Lock()
	last := p.runtimePID
	p.mu.Unlock()
	if last > 0 && p.comm(strconv.Itoa(last)) == runtimeDaemon {
		return last
	}
	entries, err := os.ReadDir(p.procRoot)
	if err != nil {
		return 0
	}
	found := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if p.comm(e.Name()) == runtimeDaemon {
			found = pid
			break
		}
	}
	p.mu.Lock()
	p.runtimePID = found
	p.mu.Unlock()
	return found
}

func (p *Provider) comm(pid string) string {
	data, err := os.ReadFile(filepath.Join(p.procRoot, pid, "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
