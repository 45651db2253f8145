package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func sidecar(name string, req, lim v1.ResourceList) v1.Container {
	c := ctr(name, req, lim)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func TestPodQOSClass(t *testing.T) {
	guaranteed := rl("cpu", "1", "memory", "1Gi")
	tests := []struct {
		name string
		pod  v1.Pod
		want v1.PodQOSClass
	}{
		{name: "no containers is best effort", want: v1.PodQOSBestEffort},
		{
			name: "no resources anywhere is best effort",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", nil, nil), ctr("b", nil, nil)}}},
			want: v1.PodQOSBestEffort,
		},
		{
			name: "only extended resources is best effort",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("example.com/gpu", "1"), rl("example.com/gpu", "1"))}}},
			want: v1.PodQOSBestEffort,
		},
		{
			name: "equal cpu and memory requests and limits is guaranteed",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", guaranteed, guaranteed)}}},
			want: v1.PodQOSGuaranteed,
		},
		{
			name: "limits without requests is burstable (no defaulting here)",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", nil, guaranteed)}}},
			want: v1.PodQOSBurstable,
		},
		{
			name: "equal quantities written differently is guaranteed",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("cpu", "1000m", "memory", "1024Mi"), guaranteed)}}},
			want: v1.PodQOSGuaranteed,
		},
		{
			name: "only cpu set is burstable",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("cpu", "1"), rl("cpu", "1"))}}},
			want: v1.PodQOSBurstable,
		},
		{
			name: "request below limit is burstable",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("cpu", "500m", "memory", "1Gi"), guaranteed)}}},
			want: v1.PodQOSBurstable,
		},
		{
			name: "guaranteed and best effort containers mix to burstable",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", guaranteed, guaranteed), ctr("b", nil, nil)}}},
			want: v1.PodQOSBurstable,
		},
		{
			name: "best effort init container spoils a guaranteed pod",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{ctr("init", nil, nil)},
				Containers:     []v1.Container{ctr("a", guaranteed, guaranteed)},
			}},
			want: v1.PodQOSBurstable,
		},
		{
			name: "guaranteed init and regular containers is guaranteed",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{ctr("init", guaranteed, guaranteed)},
				Containers:     []v1.Container{ctr("a", guaranteed, guaranteed)},
			}},
			want: v1.PodQOSGuaranteed,
		},
		{
			name: "pod-level resources decide alone",
			pod: v1.Pod{Spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Requests: guaranteed, Limits: guaranteed},
				Containers: []v1.Container{ctr("a", nil, nil)},
			}},
			want: v1.PodQOSGuaranteed,
		},
		{
			name: "pod-level requests only is burstable",
			pod: v1.Pod{Spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Requests: rl("memory", "1Gi")},
				Containers: []v1.Container{ctr("a", guaranteed, guaranteed)},
			}},
			want: v1.PodQOSBurstable,
		},
		{
			name: "recorded status class wins over the spec",
			pod: v1.Pod{
				Spec:   v1.PodSpec{Containers: []v1.Container{ctr("a", nil, nil)}},
				Status: v1.PodStatus{QOSClass: v1.PodQOSGuaranteed},
			},
			want: v1.PodQOSGuaranteed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodQOSClass(&tc.pod); got != tc.want {
				t.Errorf("PodQOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}
