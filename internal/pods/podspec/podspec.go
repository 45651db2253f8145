package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SetDefaults fills in the fields the API server would default on a v1 Pod.
// It only sets fields that are unset, so applying it twice changes nothing.
func SetDefaults(pod *v1.Pod) {
	if pod == nil {
		return
	}
	setPodDefaults(pod)
	spec := &pod.Spec
	setPodSpecDefaults(spec)
	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		setContainerDefaults(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		setContainerDefaults(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		setContainerDefaults((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpToMilli(spec.Overhead)
	if spec.Resources != nil {
		roundUpToMilli(spec.Resources.Limits)
		roundUpToMilli(spec.Resources.Requests)
	}
}

// Validate checks a (defaulted) pod the way the API server would on create and
// returns every problem found, with field paths as the API server names them
// (metadata.name, spec.containers[0].image, ...). It does not modify the pod.
func Validate(pod *v1.Pod) field.ErrorList {
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "pod is nil")}
	}
	metaPath := field.NewPath("metadata")
	specPath := field.NewPath("spec")

	allErrs := validateObjectMeta(&pod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePodAnnotations(pod.Annotations, &pod.Spec, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, pod.Name, specPath)...)
	allErrs = append(allErrs, validatePodOnly(pod, specPath)...)
	return allErrs
}
