package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const hugePagesPrefix = "hugepages-"

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), hugePagesPrefix)
}

// isNativeResource reports whether a resource name belongs to Kubernetes: no
// domain prefix, or a kubernetes.io one.
func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

// overcommitAllowed reports whether requests may be below limits for a
// resource: native resources except huge pages.
func overcommitAllowed(name v1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}

// podLevelResource reports whether spec.resources may name the resource.
func podLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || isHugePages(name)
}

var podLevelResourceNames = []string{string(v1.ResourceCPU), string(v1.ResourceMemory), hugePagesPrefix + "<size>"}

// aggregateContainerResources sums a resource list picked from every
// container of a pod the way the scheduler sizes a pod: regular containers
// and sidecars (restartable init containers) run together, while each
// ordinary init container runs alone beside the sidecars started before it;
// the pod needs the larger of the two.
func aggregateContainerResources(spec *v1.PodSpec, pick func(v1.ResourceRequirements) v1.ResourceList) v1.ResourceList {
	total := v1.ResourceList{}
	for _, c := range spec.Containers {
		addResources(total, pick(c.Resources))
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for _, c := range spec.InitContainers {
		var during v1.ResourceList
		if isRestartable(&c) {
			addResources(total, pick(c.Resources))
			addResources(sidecars, pick(c.Resources))
			during = sidecars
		} else {
			during = v1.ResourceList{}
			addResources(during, pick(c.Resources))
			addResources(during, sidecars)
		}
		maxResources(initPeak, during)
	}
	maxResources(total, initPeak)
	return total
}

func addResources(dst, src v1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func maxResources(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

func requestsOf(r v1.ResourceRequirements) v1.ResourceList { return r.Requests }
func limitsOf(r v1.ResourceRequirements) v1.ResourceList   { return r.Limits }

func isRestartable(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// roundUpToMilli rounds every quantity up to milli precision, as the API
// server does for each resource list it stores.
func roundUpToMilli(list v1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}
