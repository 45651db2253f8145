package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func TestAdmit(t *testing.T) {
	strict := v1.SupplementalGroupsPolicyStrict
	yes := true
	critical := int32(2000000000)
	untolerated := func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}}
	}
	cpuUser := testPod("user", rl("cpu", "100m"))
	port80 := v1.ContainerPort{ContainerPort: 80, HostPort: 8080}

	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		admitted []*v1.Pod
		want     Result
	}{
		{
			name: "fits",
			pod:  testPod("p", rl("cpu", "500m", "memory", "100Mi")),
			node: testNode(), admitted: []*v1.Pod{cpuUser},
			want: Result{Admit: true},
		},
		{
			name:     "too many pods",
			pod:      testPod("p", nil),
			node:     testNode(func(n *v1.Node) { n.Status.Allocatable[v1.ResourcePods] = resource.MustParse("2") }),
			admitted: []*v1.Pod{testPod("a", nil), testPod("b", nil)},
			want:     Result{Reason: "OutOfpods", Message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
		},
		{
			name: "no pods allocatable rejects every pod",
			pod:  testPod("p", nil),
			node: testNode(func(n *v1.Node) { delete(n.Status.Allocatable, v1.ResourcePods) }),
			want: Result{Reason: "OutOfpods", Message: "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0"},
		},
		{
			name: "cpu in millicores", pod: testPod("p", rl("cpu", "2")),
			node: testNode(), admitted: []*v1.Pod{cpuUser},
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 2000, used: 100, capacity: 1000"},
		},
		{
			name: "cpu exactly filling the node fits", pod: testPod("p", rl("cpu", "900m")),
			node: testNode(), admitted: []*v1.Pod{cpuUser},
			want: Result{Admit: true},
		},
		{
			name: "memory in bytes", pod: testPod("p", rl("memory", "1Gi")),
			node: testNode(), admitted: []*v1.Pod{testPod("u", rl("memory", "1Mi"))},
			want: Result{Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory, requested: 1073741824, used: 1048576, capacity: 1073741824"},
		},
		{
			name: "ephemeral storage", pod: testPod("p", rl("ephemeral-storage", "11Gi")), node: testNode(),
			want: Result{Reason: "OutOfephemeral-storage", Message: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		},
		{
			name: "huge pages", pod: testPod("p", rl("hugepages-2Mi", "4Mi")),
			node: testNode(), admitted: []*v1.Pod{testPod("u", rl("hugepages-2Mi", "2Mi"))},
			want: Result{Reason: "OutOfhugepages-2Mi", Message: "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 2097152, capacity: 4194304"},
		},
		{
			name: "huge pages of a size the node lacks", pod: testPod("p", rl("hugepages-1Gi", "1Gi")), node: testNode(),
			want: Result{Reason: "OutOfhugepages-1Gi", Message: "Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
		},
		{
			name: "extended resource", pod: testPod("p", rl("example.com/gpu", "2")),
			node: testNode(), admitted: []*v1.Pod{testPod("u", rl("example.com/gpu", "1"))},
			want: Result{Reason: "OutOfexample.com/gpu", Message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2"},
		},
		{
			name: "extended resource the node does not advertise is ignored",
			pod:  testPod("p", rl("other.io/fpga", "3")), node: testNode(),
			want: Result{Admit: true},
		},
		{
			name: "extended resource backed by a DRA claim is ignored",
			pod: testPod("p", rl("example.com/gpu", "5"), func(p *v1.Pod) {
				p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{
					ResourceClaimName: "claim",
					RequestMappings:   []v1.ContainerExtendedResourceRequest{{ContainerName: "app", ResourceName: "example.com/gpu", RequestName: "r"}},
				}
			}),
			node: testNode(), want: Result{Admit: true},
		},
		{
			name:     "several shortages report pods first",
			pod:      testPod("p", rl("cpu", "2", "memory", "2Gi")),
			node:     testNode(func(n *v1.Node) { n.Status.Allocatable[v1.ResourcePods] = resource.MustParse("1") }),
			admitted: []*v1.Pod{cpuUser},
			want:     Result{Reason: "OutOfpods", Message: "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"},
		},
		{
			name: "cpu is reported before memory and extended resources",
			pod:  testPod("p", rl("cpu", "2", "memory", "2Gi", "example.com/gpu", "3")), node: testNode(),
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"},
		},
		{
			name: "other resources are reported by name",
			pod:  testPod("p", rl("hugepages-2Mi", "8Mi", "example.com/gpu", "3")), node: testNode(),
			want: Result{Reason: "OutOfexample.com/gpu", Message: "Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2"},
		},
		{
			name: "overhead counts",
			pod:  testPod("p", rl("cpu", "800m"), func(p *v1.Pod) { p.Spec.Overhead = rl("cpu", "250m") }),
			node: testNode(),
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1050, used: 0, capacity: 1000"},
		},
		{
			name: "sidecar and init container requests",
			pod: testPod("p", rl("cpu", "300m"), func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{sidecar("proxy", rl("cpu", "200m")), ctr("setup", rl("cpu", "900m"))}
			}),
			node: testNode(),
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1100, used: 0, capacity: 1000"},
		},
		{
			name: "admitted pod's resources are the larger of spec and status",
			pod:  testPod("p", rl("cpu", "500m")), node: testNode(),
			admitted: []*v1.Pod{testPod("u", rl("cpu", "100m"), func(p *v1.Pod) {
				p.Status.ContainerStatuses = []v1.ContainerStatus{{
					Name: "app", AllocatedResources: rl("cpu", "600m"),
					Resources: &v1.ResourceRequirements{Requests: rl("cpu", "600m")},
				}}
			})},
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000"},
		},
		{
			name: "the pod itself among the admitted is not counted",
			pod:  testPod("p", rl("cpu", "800m")), node: testNode(),
			admitted: []*v1.Pod{testPod("p", rl("cpu", "800m"))},
			want:     Result{Admit: true},
		},
		{
			name: "a pod requesting nothing fits a full node",
			pod:  testPod("p", nil), node: testNode(),
			admitted: []*v1.Pod{testPod("u", rl("cpu", "1", "memory", "1Gi"))},
			want:     Result{Admit: true},
		},
		{
			name: "node selector",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z2"} }),
			node: testNode(),
			want: Result{Reason: "NodeAffinity", Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		},
		{
			name: "required node affinity",
			pod: testPod("p", nil, func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-b"}}}}},
				}}}
			}),
			node: testNode(),
			want: Result{Reason: "NodeAffinity", Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		},
		{
			name: "node name",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Spec.NodeName = "node-b" }),
			node: testNode(),
			want: Result{Reason: "NodeName", Message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		},
		{
			name: "matching node name",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Spec.NodeName = "node-a" }),
			node: testNode(), want: Result{Admit: true},
		},
		{
			name: "host port in use",
			pod:  testPod("p", nil, withPorts(port80)), node: testNode(),
			admitted: []*v1.Pod{testPod("u", nil, withPorts(port80))},
			want:     Result{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		},
		{
			name: "untolerated NoExecute taint",
			pod:  testPod("p", nil), node: testNode(untolerated),
			want: Result{Reason: "TaintToleration", Message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		},
		{
			name: "tolerated NoExecute taint",
			pod: testPod("p", nil, func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoExecute}}
			}),
			node: testNode(untolerated), want: Result{Admit: true},
		},
		{
			name: "NoSchedule taints are the scheduler's business",
			pod:  testPod("p", nil),
			node: testNode(func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}, {Key: "b", Effect: v1.TaintEffectPreferNoSchedule}}
			}),
			want: Result{Admit: true},
		},
		{
			name: "static pods skip the taint check",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Annotations[podutil.ConfigSourceAnnotationKey] = "file" }),
			node: testNode(untolerated), want: Result{Admit: true},
		},
		{
			name: "resources are reported before affinity, ports and taints",
			pod: testPod("p", rl("cpu", "2"), withPorts(port80), func(p *v1.Pod) {
				p.Spec.NodeSelector = map[string]string{"zone": "z2"}
			}),
			node: testNode(untolerated), admitted: []*v1.Pod{testPod("u", nil, withPorts(port80))},
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"},
		},
		{
			name: "node name is reported before ports",
			pod:  testPod("p", nil, withPorts(port80), func(p *v1.Pod) { p.Spec.NodeName = "node-b" }),
			node: testNode(), admitted: []*v1.Pod{testPod("u", nil, withPorts(port80))},
			want: Result{Reason: "NodeName", Message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		},
		{
			name: "critical pod reports its first non-resource failure",
			pod:  testPod("p", rl("cpu", "2"), withPorts(port80), func(p *v1.Pod) { p.Spec.Priority = &critical }),
			node: testNode(), admitted: []*v1.Pod{testPod("u", nil, withPorts(port80))},
			want: Result{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		},
		{
			name: "critical pod short of resources is rejected: no preemption",
			pod:  testPod("p", rl("cpu", "2"), func(p *v1.Pod) { p.Spec.Priority = &critical }),
			node: testNode(),
			want: Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"},
		},
		{
			name: "os label",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Labels = map[string]string{labelOS: otherOS()} }),
			node: testNode(),
			want: Result{Reason: "PodOSSelectorNodeLabelDoesNotMatch", Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		},
		{
			name: "os field",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.OSName(otherOS())} }),
			node: testNode(),
			want: Result{Reason: "PodOSNotSupported", Message: "Failed to admit pod as the OS field doesn't match node OS"},
		},
		{
			name: "os checks come first",
			pod: testPod("p", rl("cpu", "2"), func(p *v1.Pod) {
				p.Spec.OS = &v1.PodOS{Name: v1.OSName(otherOS())}
			}),
			node: testNode(),
			want: Result{Reason: "PodOSNotSupported", Message: "Failed to admit pod as the OS field doesn't match node OS"},
		},
		{
			name: "strict supplemental groups on a node without support",
			pod: testPod("p", rl("cpu", "2"), func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
			}),
			node: testNode(),
			want: Result{Reason: "SupplementalGroupsPolicyNotSupported", Message: "SupplementalGroupsPolicy=Strict is not supported in this node"},
		},
		{
			name: "strict supplemental groups on a node with support",
			pod: testPod("p", nil, func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
			}),
			node: testNode(func(n *v1.Node) { n.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &yes} }),
			want: Result{Admit: true},
		},
		{
			name: "no node: resources, affinity and taints are not checked",
			pod: testPod("p", rl("cpu", "64"), func(p *v1.Pod) {
				p.Spec.NodeSelector = map[string]string{"zone": "z2"}
				p.Spec.NodeName = "elsewhere"
			}),
			admitted: []*v1.Pod{cpuUser},
			want:     Result{Admit: true},
		},
		{
			name: "no node: host ports are checked",
			pod:  testPod("p", nil, withPorts(port80)), admitted: []*v1.Pod{testPod("u", nil, withPorts(port80))},
			want: Result{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		},
		{
			name: "no node: os is checked",
			pod:  testPod("p", nil, func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.OSName(otherOS())} }),
			want: Result{Reason: "PodOSNotSupported", Message: "Failed to admit pod as the OS field doesn't match node OS"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got := Admit(tc.pod, tc.node, tc.admitted)
			if got != tc.want {
				t.Errorf("Admit() = %+v, want %+v", got, tc.want)
			}
			if !equalPods(before, tc.pod) {
				t.Errorf("Admit() mutated the pod")
			}
		})
	}
}

func equalPods(a, b *v1.Pod) bool {
	return a.String() == b.String()
}
