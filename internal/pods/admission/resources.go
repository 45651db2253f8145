package admission

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	hugePagesPrefix         = "hugepages-"
	attachableVolumesPrefix = "attachable-volumes-"
	nativeDomain            = "kubernetes.io/"
	quotaRequestsPrefix     = "requests."
	draDeviceClassPrefix    = "deviceclass.resource.kubernetes.io/"
	messageInsufficientFmt  = "Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d"
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
			if isScalarResource(name) {
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
	req.add(podRequests(pod, false))

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

// admittedPodRequests is podRequests for a pod already running: resources
// the pod status reports as allocated or actuated count when larger than
// the spec, so an in-flight resize is never under-counted.
func admittedPodRequests(pod *v1.Pod) v1.ResourceList {
	return podRequests(pod, true)
}

// podRequests is what the pod needs reserved: regular containers and
// sidecars (restartable init containers) run together, each ordinary init
// container runs beside the sidecars declared before it, and the pod needs
// the larger of the two per resource. Pod-level requests (cpu, memory,
// hugepages-*) replace the container aggregate for the resources they name.
// Overhead is added last. With useStatus, a container's status resources
// (and the pod's, for pod-level requests) raise the spec values.
func podRequests(pod *v1.Pod, useStatus bool) v1.ResourceList {
	var statuses map[string]*v1.ContainerStatus
	infeasible := false
	if useStatus {
		statuses = map[string]*v1.ContainerStatus{}
		for i := range pod.Status.ContainerStatuses {
			statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
		}
		for i := range pod.Status.InitContainerStatuses {
			statuses[pod.Status.InitContainerStatuses[i].Name] = &pod.Status.InitContainerStatuses[i]
		}
		infeasible = resizeInfeasible(pod)
	}
	effective := func(c *v1.Container) v1.ResourceList {
		if cs, ok := statuses[c.Name]; ok && cs.Resources != nil {
			return effectiveRequests(c.Resources.Requests, cs.Resources.Requests, cs.AllocatedResources, infeasible)
		}
		return c.Resources.Requests
	}

	total := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(total, effective(&pod.Spec.Containers[i]))
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isRestartable(c) {
			reqs := effective(c)
			addList(total, reqs)
			addList(sidecars, reqs)
			maxList(initPeak, sidecars)
			continue
		}
		during := v1.ResourceList{}
		addList(during, c.Resources.Requests)
		addList(during, sidecars)
		maxList(initPeak, during)
	}
	maxList(total, initPeak)

	if podLevelRequestsSet(pod) {
		var eff v1.ResourceList
		if useStatus && pod.Status.Resources != nil {
			eff = effectiveRequests(pod.Spec.Resources.Requests, pod.Status.Resources.Requests, pod.Status.AllocatedResources, infeasible)
		}
		for name, q := range pod.Spec.Resources.Requests {
			if !podLevelResource(name) {
				continue
			}
			if eff != nil {
				q = eff[name]
			}
			total[name] = q.DeepCopy()
		}
	}
	addList(total, pod.Spec.Overhead)
	return total
}

// effectiveRequests is the per-resource maximum of the spec, actuated and
// allocated requests; when a resize is infeasible the spec is left out.
func effectiveRequests(spec, actuated, allocated v1.ResourceList, infeasible bool) v1.ResourceList {
	out := v1.ResourceList{}
	if !infeasible {
		maxList(out, spec)
	}
	maxList(out, actuated)
	maxList(out, allocated)
	return out
}

func resizeInfeasible(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodResizePending {
			return c.Reason == v1.PodReasonInfeasible
		}
	}
	return false
}

// withoutMissingExtendedResources returns the pod, or a copy of it whose
// container requests no longer name extended resources the node does not
// advertise, nor resources a DRA claim backs for that container. Upstream
// does this so cluster-level and DRA-backed extended resources do not fail
// admission on the node.
func withoutMissingExtendedResources(pod *v1.Pod, node *v1.Node) *v1.Pod {
	drop := func(name v1.ResourceName, container string) bool {
		if isExtendedResource(name) {
			if _, ok := node.Status.Allocatable[name]; !ok {
				return true
			}
		}
		return (isExtendedResource(name) || strings.HasPrefix(string(name), draDeviceClassPrefix)) &&
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

// podLevelRequestsSet reports whether spec.resources requests any resource
// pod-level resources may name.
func podLevelRequestsSet(pod *v1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for name := range pod.Spec.Resources.Requests {
		if podLevelResource(name) {
			return true
		}
	}
	return false
}

func podLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), hugePagesPrefix)
}

// isNativeResource: no domain, or a kubernetes.io one.
func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), nativeDomain)
}

// isExtendedResource: a domain-qualified name outside kubernetes.io that
// would also be a valid quota name.
func isExtendedResource(name v1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), quotaRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(quotaRequestsPrefix+string(name))) == 0
}

// isScalarResource: the resources counted by name beyond cpu, memory,
// ephemeral-storage and pods.
func isScalarResource(name v1.ResourceName) bool {
	s := string(name)
	return isExtendedResource(name) || strings.HasPrefix(s, hugePagesPrefix) ||
		strings.Contains(s, nativeDomain) || strings.HasPrefix(s, attachableVolumesPrefix)
}

func addList(dst, src v1.ResourceList) {
	for name, q := range src {
		sum, ok := dst[name]
		if !ok {
			dst[name] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		dst[name] = sum
	}
}

func maxList(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}
