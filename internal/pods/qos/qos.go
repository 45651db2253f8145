package qos

import (
	v1 "k8s.io/api/core/v1"
)

// classResources are the resources that decide a QoS class.
var classResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// PodQOSClass returns the pod's QoS class. A class already recorded in
// status.qosClass wins: the class is fixed when the pod is admitted, even if
// resources are later resized in place.
func PodQOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOSClass(pod)
}

// ComputePodQOSClass derives the QoS class from the spec alone. Pod-level
// resources, when present, decide on their own; otherwise every init and
// regular container must agree: all Guaranteed gives Guaranteed, all
// BestEffort gives BestEffort, anything else is Burstable.
func ComputePodQOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Spec.Resources != nil {
		return classOf(pod.Spec.Resources)
	}
	var class v1.PodQOSClass
	visit := func(c *v1.Container) bool {
		cc := classOf(&c.Resources)
		switch {
		case cc == v1.PodQOSBurstable:
			class = v1.PodQOSBurstable
			return false
		case class == "":
			class = cc
		case class != cc:
			class = v1.PodQOSBurstable
			return false
		}
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !visit(&pod.Spec.InitContainers[i]) {
			return class
		}
	}
	for i := range pod.Spec.Containers {
		if !visit(&pod.Spec.Containers[i]) {
			return class
		}
	}
	if class == "" {
		return v1.PodQOSBestEffort
	}
	return class
}

// classOf classifies one set of requirements: equal non-zero request and
// limit for both cpu and memory is Guaranteed, neither set is BestEffort.
func classOf(r *v1.ResourceRequirements) v1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return v1.PodQOSBestEffort
	}
	var class v1.PodQOSClass
	for _, name := range classResources {
		req, lim := r.Requests[name], r.Limits[name]
		if req.Cmp(lim) != 0 {
			return v1.PodQOSBurstable
		}
		this := v1.PodQOSGuaranteed
		if req.IsZero() {
			this = v1.PodQOSBestEffort
		}
		if class == "" {
			class = this
		} else if class != this {
			return v1.PodQOSBurstable
		}
	}
	return class
}
