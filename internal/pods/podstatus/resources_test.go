package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

func req(cpuReq, memReq, cpuLim, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for _, x := range []struct {
		l    v1.ResourceList
		name v1.ResourceName
		q    string
	}{{r.Requests, v1.ResourceCPU, cpuReq}, {r.Requests, v1.ResourceMemory, memReq}, {r.Limits, v1.ResourceCPU, cpuLim}, {r.Limits, v1.ResourceMemory, memLim}} {
		if x.q != "" {
			x.l[x.name] = resource.MustParse(x.q)
		}
	}
	return r
}

// status.containerStatuses[].resources, as upstream's
// convertContainerStatusResources (TestConvertToAPIContainerStatusesForResources).
func TestStatusResources(t *testing.T) {
	allocated := req("100m", "100Mi", "200m", "200Mi")
	running := func(r *runtimeapi.LinuxContainerResources) *kuberuntime.ContainerStatus {
		return &kuberuntime.ContainerStatus{ID: "c1", State: kuberuntime.StateRunning, Resources: r}
	}
	actuated := req("150m", "120Mi", "300m", "250Mi")
	old := &v1.ContainerStatus{ContainerID: "containerd://c1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		Resources: &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("99Mi")}}}
	cases := []struct {
		name     string
		alloc    *v1.ResourceRequirements
		latest   *kuberuntime.ContainerStatus
		actuated *v1.ResourceRequirements
		old      *v1.ContainerStatus
		want     v1.ResourceRequirements
	}{
		{name: "not running: the allocated resources", latest: &kuberuntime.ContainerStatus{State: kuberuntime.StateExited},
			actuated: &actuated, want: allocated},
		{name: "the runtime's values, memory request from what was applied",
			latest:   running(&runtimeapi.LinuxContainerResources{CpuShares: 307, CpuQuota: 40000, CpuPeriod: 100000, MemoryLimitInBytes: 300 << 20}),
			actuated: &actuated, want: req("300m", "120Mi", "400m", "300Mi")},
		{name: "the runtime reports nothing: what was applied",
			latest: running(nil), actuated: &actuated, want: actuated},
		{name: "neither knows: the previous status of the same instance, else the allocated",
			latest: running(nil), old: old, want: req("100m", "99Mi", "200m", "200Mi")},
		{name: "at or below the minimums the allocated values show", alloc: &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m")}, Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m")}},
			latest: running(&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuQuota: 1000, CpuPeriod: 100000}),
			want:   v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m")}, Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			alloc := allocated
			if tc.alloc != nil {
				alloc = *tc.alloc
			}
			got := statusResources(alloc, tc.latest, tc.actuated, tc.old, "containerd://c1")
			if !apiequality.Semantic.DeepEqual(*got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
