package admission

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

const (
	draDeviceClassPrefix   = "deviceclass.resource.kubernetes.io/"
	messageInsufficientFmt = "Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d"
)

// amounts is a resource vector in the units the fit check compares:
// milli-cores for cpu, whole units (bytes, devices) for everything else.
type amounts struct {
	milliCPU, memory, ephemeralStorage int64
	pods                               int64
	scalar                             map[v1.ResourceName]int64
}

// add folds a resource list into the vector. Names outside cpu, memory,
// ephemeral-storage, pods and the scalar families are ignored.
func (a *amounts) add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			a.milliCPU += q.MilliValue()
		case v1.ResourceMemory:
			a.memory += q.Value()
		case v1.ResourceEphemeralStorage:
			a.ephemeralStorage += q.Value()
		case v1.ResourcePods:
			a.pods += q.Value()
		default:
			if podutil.IsScalarResourceName(name) {
				if a.scalar == nil {
					a.scalar = map[v1.ResourceName]int64{}
				}
				a.scalar[name] += q.Value()
			}
		}
	}
}

// resourceFailures checks that pod fits next to others on node: one more pod
// than others within the allocatable pod count, then, for each resource the
// pod requests, the request within allocatable minus what others request.
// Failures come in upstream's order: pods, cpu, memory, ephemeral-storage,
// then the other resources (sorted by name here; upstream's order is random).
func resourceFailures(pod *v1.Pod, node *v1.Node, others []*v1.Pod) []failure {
	var alloc, used amounts
	alloc.add(node.Status.Allocatable)
	for _, o := range others {
		used.add(admittedPodRequests(o))
	}
	var req amounts
	req.add(podRequests(pod))

	var out []failure
	if int64(len(others))+1 > alloc.pods {
		out = append(out, insufficient(v1.ResourcePods, 1, int64(len(others)), alloc.pods))
	}
	if req.milliCPU > 0 && req.milliCPU > alloc.milliCPU-used.milliCPU {
		out = append(out, insufficient(v1.ResourceCPU, req.milliCPU, used.milliCPU, alloc.milliCPU))
	}
	if req.memory > 0 && req.memory > alloc.memory-used.memory {
		out = append(out, insufficient(v1.ResourceMemory, req.memory, used.memory, alloc.memory))
	}
	if req.ephemeralStorage > 0 && req.ephemeralStorage > alloc.ephemeralStorage-used.ephemeralStorage {
		out = append(out, insufficient(v1.ResourceEphemeralStorage, req.ephemeralStorage, used.ephemeralStorage, alloc.ephemeralStorage))
	}
	names := make([]v1.ResourceName, 0, len(req.scalar))
	for name := range req.scalar {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, name := range names {
		r := req.scalar[name]
		if r > 0 && r > alloc.scalar[name]-used.scalar[name] {
			out = append(out, insufficient(name, r, used.scalar[name], alloc.scalar[name]))
		}
	}
	return out
}

func insufficient(name v1.ResourceName, requested, used, capacity int64) failure {
	return failure{
		reason:   ReasonInsufficientResourcePrefix + string(name),
		message:  fmt.Sprintf(messageInsufficientFmt, name, requested, used, capacity),
		resource: true,
	}
}

// podRequests is what the pod being admitted asks for (overhead included),
// as the scheduler's fit check reads it; its status is not looked at.
func podRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// admittedPodRequests is what a pod already running holds, as the
// scheduler's NodeInfo counts it: resources the pod status reports as
// allocated or actuated count when larger than the spec (an infeasible
// resize leaves the spec out), for containers and pod-level resources, so an
// in-flight resize is never under-counted.
func admittedPodRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true,
	})
}

// withoutMissingExtendedResources returns the pod, or a copy of it whose
// container requests no longer name extended resources the node does not
// advertise, nor resources a DRA claim backs for that container. Upstream
// does this so cluster-level and DRA-backed extended resources do not fail
// admission on the node.
func withoutMissingExtendedResources(pod *v1.Pod, node *v1.Node) *v1.Pod {
	drop := func(name v1.ResourceName, container string) bool {
		if podutil.IsExtendedResourceName(name) {
			if _, ok := node.Status.Allocatable[name]; !ok {
				return true
			}
		}
		return (podutil.IsExtendedResourceName(name) || strings.HasPrefix(string(name), draDeviceClassPrefix)) &&
			draBacked(pod, name, container)
	}
	needed := false
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if drop(name, cs[i].Name) {
					needed = true
				}
			}
		}
	}
	if !needed {
		return pod
	}
	cp := pod.DeepCopy()
	for _, cs := range [][]v1.Container{cp.Spec.InitContainers, cp.Spec.Containers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if drop(name, cs[i].Name) {
					delete(cs[i].Resources.Requests, name)
				}
			}
		}
	}
	return cp
}

// draBacked reports whether the pod status maps the container's request for
// name to a DRA resource claim.
func draBacked(pod *v1.Pod, name v1.ResourceName, container string) bool {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return false
	}
	for _, m := range st.RequestMappings {
		if v1.ResourceName(m.ResourceName) == name && m.ContainerName == container {
			return true
		}
	}
	return false
}
