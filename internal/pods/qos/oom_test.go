package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func TestContainerOOMScoreAdjust(t *testing.T) {
	const gi = int64(1 << 30)
	capacity := 10 * gi
	guaranteed := rl("cpu", "1", "memory", "1Gi")
	priority := int32(2_000_000_000)
	tests := []struct {
		name      string
		pod       v1.Pod
		container string
		capacity  int64
		want      int
	}{
		{
			name:      "guaranteed",
			pod:       v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", guaranteed, guaranteed)}}},
			container: "a", want: -997,
		},
		{
			name:      "best effort",
			pod:       v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", nil, nil)}}},
			container: "a", want: 1000,
		},
		{
			name: "node critical static pod is protected like guaranteed",
			pod: v1.Pod{
				ObjectMeta: objMeta(map[string]string{podutil.ConfigSourceAnnotationKey: "file"}),
				Spec:       v1.PodSpec{PriorityClassName: "system-node-critical", Containers: []v1.Container{ctr("a", nil, nil)}},
			},
			container: "a", want: -997,
		},
		{
			name: "node critical by priority value",
			pod: v1.Pod{Spec: v1.PodSpec{Priority: &priority, PriorityClassName: "system-node-critical",
				Containers: []v1.Container{ctr("a", nil, nil)}}},
			container: "a", want: -997,
		},
		{
			name: "cluster critical class alone is not node critical",
			pod: v1.Pod{Spec: v1.PodSpec{Priority: &priority, PriorityClassName: "system-cluster-critical",
				Containers: []v1.Container{ctr("a", nil, nil)}}},
			container: "a", want: 1000,
		},
		{
			name:      "burstable requesting 10 percent scores 900",
			pod:       v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("memory", "1Gi"), nil)}}},
			container: "a", want: 900,
		},
		{
			name:      "burstable without memory request scores 999 not 1000",
			pod:       v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("cpu", "100m"), nil)}}},
			container: "a", want: 999,
		},
		{
			name:      "burstable requesting the whole node is clamped to 3",
			pod:       v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("memory", "10Gi"), nil)}}},
			container: "a", want: 3,
		},
		{
			name: "sidecar never scores above the smallest regular container",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{sidecar("proxy", rl("memory", "100Mi"), nil)},
				Containers:     []v1.Container{ctr("a", rl("memory", "2Gi"), nil), ctr("b", rl("memory", "1Gi"), nil)},
			}},
			container: "proxy", want: 900,
		},
		{
			name: "unclaimed pod-level memory request is shared among containers",
			pod: v1.Pod{Spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Requests: rl("memory", "4Gi")},
				Containers: []v1.Container{ctr("a", rl("memory", "1Gi"), nil), ctr("b", rl("memory", "1Gi"), nil)},
			}},
			// (4Gi-2Gi)/2 = 1Gi extra each: 2Gi of 10Gi.
			container: "a", want: 800,
		},
		{
			name:      "unknown capacity scores as the weakest burstable",
			pod:       v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("memory", "1Gi"), nil)}}},
			container: "a", capacity: -1, want: 999,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := find(&tc.pod, tc.container)
			capa := capacity
			if tc.capacity != 0 {
				capa = tc.capacity
			}
			if got := ContainerOOMScoreAdjust(&tc.pod, c, capa); got != tc.want {
				t.Errorf("ContainerOOMScoreAdjust = %d, want %d", got, tc.want)
			}
		})
	}
}

func find(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func objMeta(annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: annotations}
}
