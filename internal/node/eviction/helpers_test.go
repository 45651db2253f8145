package eviction

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

const mi = int64(1) << 20

func u64(v int64) *uint64 { x := uint64(v); return &x }

// nodeSummary is a node with memCapacity bytes of which ws are in the
// working set, and a nodefs/imagefs of the given sizes.
func nodeSummary(at time.Time, memCapacity, ws int64, pods ...statsapi.PodStats) *statsapi.Summary {
	t := metav1.NewTime(at)
	fs := &statsapi.FsStats{Time: t, CapacityBytes: u64(100 << 30), AvailableBytes: u64(50 << 30), Inodes: u64(1000), InodesFree: u64(500)}
	imgfs := *fs
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			Memory:  &statsapi.MemoryStats{Time: t, AvailableBytes: u64(memCapacity - ws), WorkingSetBytes: u64(ws), UsageBytes: u64(ws + 100*mi)},
			Fs:      fs,
			Runtime: &statsapi.RuntimeStats{ImageFs: &imgfs, ContainerFs: &imgfs},
		},
		Pods: pods,
	}
}

func podStats(p *v1.Pod, ws int64, containerWS ...int64) statsapi.PodStats {
	ps := statsapi.PodStats{
		PodRef: statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
		Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(ws)},
	}
	for i, c := range p.Spec.Containers {
		cws := ws
		if i < len(containerWS) {
			cws = containerWS[i]
		}
		ps.Containers = append(ps.Containers, statsapi.ContainerStats{Name: c.Name, Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(cws)}})
	}
	return ps
}

// testPod is an API pod with one container "c" requesting memReq (none if
// empty) at the given priority.
func testPod(name, memReq string, prio int32) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
			Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c"}}},
	}
	if memReq != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memReq)}
	}
	return p
}

func mustParse(c evictionapi.ThresholdConfig) []evictionapi.Threshold {
	ts, _, err := evictionapi.ParseThresholds(c)
	if err != nil {
		panic(err)
	}
	return ts
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
