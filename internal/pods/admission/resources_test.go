package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name      string
		pod       *v1.Pod
		useStatus bool
		want      v1.ResourceList
	}{
		{
			name: "regular containers add up",
			pod: testPod("p", rl("cpu", "100m", "memory", "10Mi"), func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, ctr("b", rl("cpu", "200m", "example.com/gpu", "1")))
			}),
			want: rl("cpu", "300m", "memory", "10Mi", "example.com/gpu", "1"),
		},
		{
			name: "largest init container wins over a smaller sum",
			pod: testPod("p", rl("cpu", "100m", "memory", "50Mi"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{ctr("i1", rl("cpu", "500m")), ctr("i2", rl("cpu", "200m", "memory", "10Mi"))}
			}),
			want: rl("cpu", "500m", "memory", "50Mi"),
		},
		{
			name: "sidecars run with the containers and with later init containers",
			pod: testPod("p", rl("cpu", "100m"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{
					ctr("before", rl("cpu", "350m")),
					sidecar("s1", rl("cpu", "100m")),
					ctr("mid", rl("cpu", "250m")),
					sidecar("s2", rl("cpu", "50m")),
				}
			}),
			// regular: 100 + 100 + 50 = 250; before alone 350; mid with s1 350
			want: rl("cpu", "350m"),
		},
		{
			name: "sidecars raise a later init container above the regular sum",
			pod: testPod("p", rl("cpu", "100m"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{sidecar("s", rl("cpu", "200m")), ctr("after", rl("cpu", "300m"))}
			}),
			want: rl("cpu", "500m"),
		},
		{
			name: "overhead is added",
			pod:  testPod("p", rl("cpu", "100m"), func(p *v1.Pod) { p.Spec.Overhead = rl("cpu", "10m", "memory", "5Mi") }),
			want: rl("cpu", "110m", "memory", "5Mi"),
		},
		{
			name: "pod-level requests replace only what they name",
			pod: testPod("p", rl("cpu", "100m", "memory", "10Mi", "hugepages-2Mi", "2Mi"), func(p *v1.Pod) {
				p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "1", "hugepages-2Mi", "4Mi")}
				p.Spec.Overhead = rl("cpu", "50m")
			}),
			want: rl("cpu", "1050m", "memory", "10Mi", "hugepages-2Mi", "4Mi"),
		},
		{
			name: "status is ignored for the pod being admitted",
			pod:  testPod("p", rl("cpu", "100m"), withStatus(rl("cpu", "300m"), rl("cpu", "200m"))),
			want: rl("cpu", "100m"),
		},
		{
			name:      "admitted pod uses the largest of spec, actuated and allocated",
			pod:       testPod("p", rl("cpu", "100m"), withStatus(rl("cpu", "300m"), rl("cpu", "200m"))),
			useStatus: true,
			want:      rl("cpu", "300m"),
		},
		{
			name: "infeasible resize leaves the spec out",
			pod: testPod("p", rl("cpu", "900m"), withStatus(rl("cpu", "300m"), rl("cpu", "200m")), func(p *v1.Pod) {
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible}}
			}),
			useStatus: true,
			want:      rl("cpu", "300m"),
		},
		{
			name: "admitted pod-level requests use pod status",
			pod: testPod("p", nil, func(p *v1.Pod) {
				p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("memory", "100Mi")}
				p.Status.Resources = &v1.ResourceRequirements{Requests: rl("memory", "200Mi")}
			}),
			useStatus: true,
			want:      rl("memory", "200Mi"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := podRequests(tc.pod)
			if tc.useStatus {
				got = admittedPodRequests(tc.pod)
			}
			if !equalLists(got, tc.want) {
				t.Errorf("podRequests() = %v, want %v", got, tc.want)
			}
		})
	}
}

// withStatus reports the first container as actuated and allocated.
func withStatus(actuated, allocated v1.ResourceList) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Status.ContainerStatuses = []v1.ContainerStatus{{
			Name: p.Spec.Containers[0].Name, AllocatedResources: allocated,
			Resources: &v1.ResourceRequirements{Requests: actuated},
		}}
	}
}

func equalLists(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		other, ok := b[name]
		if !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

func TestWithoutMissingExtendedResources(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want v1.ResourceList
	}{
		{
			name: "advertised extended resource kept",
			pod:  testPod("p", rl("example.com/gpu", "1", "cpu", "1")),
			want: rl("example.com/gpu", "1", "cpu", "1"),
		},
		{
			name: "unadvertised extended resource dropped, native kept",
			pod:  testPod("p", rl("other.io/fpga", "1", "hugepages-1Gi", "1Gi")),
			want: rl("hugepages-1Gi", "1Gi"),
		},
		{
			name: "DRA device class resource dropped when a claim backs it",
			pod: testPod("p", rl("deviceclass.resource.kubernetes.io/gpu", "1"), func(p *v1.Pod) {
				p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{RequestMappings: []v1.ContainerExtendedResourceRequest{
					{ContainerName: "app", ResourceName: "deviceclass.resource.kubernetes.io/gpu"},
				}}
			}),
			want: rl(),
		},
		{
			name: "claim for another container keeps the request",
			pod: testPod("p", rl("example.com/gpu", "1"), func(p *v1.Pod) {
				p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{RequestMappings: []v1.ContainerExtendedResourceRequest{
					{ContainerName: "other", ResourceName: "example.com/gpu"},
				}}
			}),
			want: rl("example.com/gpu", "1"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got := withoutMissingExtendedResources(tc.pod, testNode())
			if !equalLists(got.Spec.Containers[0].Resources.Requests, tc.want) {
				t.Errorf("requests = %v, want %v", got.Spec.Containers[0].Resources.Requests, tc.want)
			}
			if !equalPods(before, tc.pod) {
				t.Errorf("input pod mutated")
			}
		})
	}
}
