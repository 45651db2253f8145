package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// aggregateRequests and aggregateLimits size the containers of a spec as
// the scheduler does (sidecars beside the app and later init containers).
func aggregateRequests(spec *v1.PodSpec) v1.ResourceList {
	return resourcehelper.AggregateContainerRequests(&v1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
}

func aggregateLimits(spec *v1.PodSpec) v1.ResourceList {
	return resourcehelper.AggregateContainerLimits(&v1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
}

// roundUpToMilli rounds every quantity up to milli precision, as the API
// server does for each resource list it stores.
func roundUpToMilli(list v1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}
