package admission

import (
	"runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// otherOS is an OS this test binary does not run on.
func otherOS() string {
	if runtime.GOOS == "windows" {
		return "linux"
	}
	return "windows"
}

// rl builds a resource list from name/quantity pairs.
func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(name string, requests v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: requests}}
}

func sidecar(name string, requests v1.ResourceList) v1.Container {
	c := ctr(name, requests)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// testPod is an API pod named name with one container requesting reqs.
func testPod(name string, reqs v1.ResourceList, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Annotations: map[string]string{podutil.ConfigSourceAnnotationKey: podutil.ApiserverSource},
		},
		Spec: v1.PodSpec{Containers: []v1.Container{ctr("app", reqs)}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withPorts(ports ...v1.ContainerPort) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, ports...) }
}

// testNode is node-a with 1 cpu, 1Gi memory, 10Gi ephemeral storage, 10
// pods, 4Mi of 2Mi huge pages and 2 example.com/gpu.
func testNode(mutate ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
			"kubernetes.io/hostname": "node-a", labelOS: runtime.GOOS, "zone": "z1", "cores": "8",
		}},
		Status: v1.NodeStatus{Allocatable: rl(
			"cpu", "1", "memory", "1Gi", "ephemeral-storage", "10Gi", "pods", "10",
			"hugepages-2Mi", "4Mi", "example.com/gpu", "2",
		)},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}
