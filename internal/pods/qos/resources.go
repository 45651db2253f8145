package qos

import (
	v1 "k8s.io/api/core/v1"
)

// PodRequests returns what the pod asks for, overhead excluded: regular
// containers and sidecars (restartable init containers) run together, each
// ordinary init container runs beside the sidecars started before it, and the
// pod needs the larger of the two. Pod-level requests replace the aggregate
// for the resources they name.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	out := aggregate(&pod.Spec, func(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests })
	if pod.Spec.Resources != nil {
		overridePodLevel(out, pod.Spec.Resources.Requests)
	}
	return out
}

// PodLimits is PodRequests for limits. A resource absent from every
// container is absent from the result; one absent from some containers is
// the sum of those that set it.
func PodLimits(pod *v1.Pod) v1.ResourceList {
	out := aggregate(&pod.Spec, func(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits })
	if pod.Spec.Resources != nil {
		overridePodLevel(out, pod.Spec.Resources.Limits)
	}
	return out
}

// IsPodLevelRequestsSet reports whether spec.resources requests cpu or memory.
func IsPodLevelRequestsSet(pod *v1.Pod) bool {
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

// IsPodLevelResourcesSet reports whether spec.resources sets any cpu or
// memory request or limit.
func IsPodLevelResourcesSet(pod *v1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for name := range pod.Spec.Resources.Limits {
		if podLevelResource(name) {
			return true
		}
	}
	return IsPodLevelRequestsSet(pod)
}

func podLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory
}

func overridePodLevel(out, podLevel v1.ResourceList) {
	for name, q := range podLevel {
		if podLevelResource(name) {
			out[name] = q.DeepCopy()
		}
	}
}

// IsSidecar reports whether c is one of the pod's restartable init containers.
func IsSidecar(pod *v1.Pod, c *v1.Container) bool {
	if !restartable(c) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

func restartable(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func aggregate(spec *v1.PodSpec, pick func(*v1.ResourceRequirements) v1.ResourceList) v1.ResourceList {
	total := v1.ResourceList{}
	for i := range spec.Containers {
		add(total, pick(&spec.Containers[i].Resources))
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		during := v1.ResourceList{}
		if restartable(c) {
			add(total, pick(&c.Resources))
			add(sidecars, pick(&c.Resources))
			add(during, sidecars)
		} else {
			add(during, pick(&c.Resources))
			add(during, sidecars)
		}
		raise(initPeak, during)
	}
	raise(total, initPeak)
	return total
}

func add(into, from v1.ResourceList) {
	for name, q := range from {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

func raise(into, from v1.ResourceList) {
	for name, q := range from {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}
