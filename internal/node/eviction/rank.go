package eviction

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// PodStats finds a pod's stats in a summary.
type PodStats map[types.UID]statsapi.PodStats

// StatsByUID indexes a summary's pod stats.
func StatsByUID(s *statsapi.Summary) PodStats {
	out := PodStats{}
	if s == nil {
		return out
	}
	for _, p := range s.Pods {
		out[types.UID(p.PodRef.UID)] = p
	}
	return out
}

// fsParts says which parts of a pod's disk usage count for a signal.
type fsParts struct{ root, logs, volumes bool }

// Rank orders pods for eviction under pressure of signal, first to evict
// first, as upstream:
//   - memory: pods whose working set exceeds their memory request, then by
//     priority (lowest first), then by working set above the request;
//   - disk (bytes or inodes): pods whose usage exceeds their request, then
//     priority, then usage above the request; usage counts the writable
//     layers, logs and local volumes on a shared filesystem, only logs and
//     volumes for nodefs and only the writable layers for imagefs when the
//     image filesystem is dedicated;
//   - pids: priority, then process count.
//
// Pods without stats go first. Rank sorts pods in place (stable).
func Rank(signal evictionapi.Signal, pods []*v1.Pod, stats PodStats, dedicatedImageFs bool) {
	res := evictionapi.ResourceOf(signal)
	var usage func(p *v1.Pod, s statsapi.PodStats) resource.Quantity
	var request func(p *v1.Pod) resource.Quantity
	switch res {
	case v1.ResourceMemory:
		usage = func(_ *v1.Pod, s statsapi.PodStats) resource.Quantity { return workingSet(s.Memory) }
		request = func(p *v1.Pod) resource.Quantity { return podRequest(p, v1.ResourceMemory) }
	case v1.ResourceEphemeralStorage, evictionapi.ResourceInodes:
		parts := fsParts{root: true, logs: true, volumes: true}
		if dedicatedImageFs {
			switch signal {
			case evictionapi.SignalNodeFsAvailable, evictionapi.SignalNodeFsInodesFree:
				parts.root = false
			default:
				parts.logs, parts.volumes = false, false
			}
		}
		inodes := res == evictionapi.ResourceInodes
		usage = func(p *v1.Pod, s statsapi.PodStats) resource.Quantity { return diskUsage(p, s, parts, inodes) }
		request = func(p *v1.Pod) resource.Quantity {
			if inodes {
				return resource.Quantity{}
			}
			return podRequest(p, v1.ResourceEphemeralStorage)
		}
	case evictionapi.ResourcePids:
		sort.SliceStable(pods, func(i, j int) bool {
			a, b := pods[i], pods[j]
			sa, okA := stats[a.UID]
			sb, okB := stats[b.UID]
			if okA != okB {
				return !okA
			}
			if pa, pb := priority(a), priority(b); pa != pb {
				return pa < pb
			}
			return processes(sa) > processes(sb)
		})
		return
	default:
		return
	}
	type entry struct {
		found, exceeds bool
		prio           int32
		above          resource.Quantity
	}
	entries := make(map[types.UID]entry, len(pods))
	for _, p := range pods {
		e := entry{prio: priority(p)}
		if s, ok := stats[p.UID]; ok {
			e.found = true
			u, r := usage(p, s), request(p)
			e.exceeds = u.Cmp(r) > 0
			u.Sub(r)
			e.above = u
		}
		entries[p.UID] = e
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := entries[pods[i].UID], entries[pods[j].UID]
		if a.found != b.found {
			return !a.found
		}
		if !a.found {
			return false
		}
		if a.exceeds != b.exceeds {
			return a.exceeds
		}
		if a.prio != b.prio {
			return a.prio < b.prio
		}
		return a.above.Cmp(b.above) > 0
	})
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// podRequest is the pod's request for name as upstream's eviction ranking
// reads it (GetResourceRequestQuantity): pod-level requests alone when the
// pod sets pod-level resources, else the containers' aggregate; overhead is
// added to a non-zero request.
func podRequest(p *v1.Pod, name v1.ResourceName) resource.Quantity {
	q := resource.Quantity{Format: resource.DecimalSI}
	if name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage {
		q.Format = resource.BinarySI
	}
	opts := resourcehelper.PodResourcesOptions{SkipContainerLevelResources: resourcehelper.IsPodLevelResourcesSet(p), ExcludeOverhead: true}
	if r, ok := resourcehelper.PodRequests(p, opts)[name]; ok {
		q.Add(r)
	}
	if o, ok := p.Spec.Overhead[name]; ok && !q.IsZero() {
		q.Add(o)
	}
	return q
}

func workingSet(m *statsapi.MemoryStats) resource.Quantity {
	if m == nil || m.WorkingSetBytes == nil {
		return *resource.NewQuantity(0, resource.BinarySI)
	}
	return *resource.NewQuantity(int64(*m.WorkingSetBytes), resource.BinarySI)
}

func processes(s statsapi.PodStats) uint64 {
	if s.ProcessStats == nil || s.ProcessStats.ProcessCount == nil {
		return 0
	}
	return *s.ProcessStats.ProcessCount
}

// diskUsage adds up the chosen parts of a pod's disk use, in bytes or inodes.
func diskUsage(p *v1.Pod, s statsapi.PodStats, parts fsParts, inodes bool) resource.Quantity {
	var total int64
	add := func(fs *statsapi.FsStats) {
		if fs == nil {
			return
		}
		if inodes {
			if fs.InodesUsed != nil {
				total += int64(*fs.InodesUsed)
			}
		} else if fs.UsedBytes != nil {
			total += int64(*fs.UsedBytes)
		}
	}
	for i := range s.Containers {
		if parts.root {
			add(s.Containers[i].Rootfs)
		}
		if parts.logs {
			add(s.Containers[i].Logs)
		}
	}
	if parts.volumes {
		local := localVolumes(p)
		for i := range s.VolumeStats {
			if local[s.VolumeStats[i].Name] {
				add(&s.VolumeStats[i].FsStats)
			}
		}
	}
	if inodes {
		return *resource.NewQuantity(total, resource.DecimalSI)
	}
	return *resource.NewQuantity(total, resource.BinarySI)
}

// localVolumes are the pod's volumes stored on the node's disk: hostPath
// and the local ephemeral ones (volume.IsLocalEphemeral), as upstream's
// eviction counts them; memory-backed volumes are not.
func localVolumes(p *v1.Pod) map[string]bool {
	out := map[string]bool{}
	for i := range p.Spec.Volumes {
		if v := &p.Spec.Volumes[i]; v.HostPath != nil || volume.IsLocalEphemeral(v) {
			out[v.Name] = true
		}
	}
	return out
}
