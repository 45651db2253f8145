package podspec

import (
	"encoding/json"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateObjectMeta checks a pod's metadata on create: name a DNS subdomain,
// namespace a DNS label, and well-formed labels, annotations, owner
// references and finalizers.
func validateObjectMeta(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateObjectMeta(meta, true, apivalidation.NameIsDNSSubdomain, fldPath)
}

// validatePodAnnotations checks the annotations whose values the API server
// parses for pods.
func validatePodAnnotations(annotations map[string]string, spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if value, ok := annotations[v1.MirrorPodAnnotationKey]; ok && spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(v1.MirrorPodAnnotationKey), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if value := annotations[v1.TolerationsAnnotationKey]; value != "" {
		var tolerations []v1.Toleration
		if err := json.Unmarshal([]byte(value), &tolerations); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, v1.TolerationsAnnotationKey, err.Error()))
		} else {
			allErrs = append(allErrs, validateTolerations(tolerations, fldPath.Child(v1.TolerationsAnnotationKey))...)
		}
	}
	if value, ok := annotations[v1.PodDeletionCost]; ok {
		if _, err := strconv.ParseInt(value, 10, 32); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(v1.PodDeletionCost), value, "must be a 32bit integer"))
		}
	}
	for _, key := range sortedKeys(annotations) {
		value := annotations[key]
		switch {
		case key == v1.SeccompPodAnnotationKey || strings.HasPrefix(key, v1.SeccompContainerAnnotationKeyPrefix):
			allErrs = append(allErrs, validateSeccompAnnotationValue(value, fldPath.Child(key))...)
		case strings.HasPrefix(key, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix):
			name := strings.TrimPrefix(key, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
			if !specHasContainer(spec, name) {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(key), name, "container not found"))
			}
			if !validAppArmorAnnotationValue(value) {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(key), value, "invalid AppArmor profile name: "+strconv.Quote(value)))
			}
		}
	}
	return allErrs
}

func validateSeccompAnnotationValue(value string, fldPath *field.Path) field.ErrorList {
	switch {
	case value == v1.SeccompProfileRuntimeDefault, value == v1.DeprecatedSeccompProfileDockerDefault, value == v1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(value, v1.SeccompLocalhostProfileNamePrefix):
		return validateLocalDescendingPath(strings.TrimPrefix(value, v1.SeccompLocalhostProfileNamePrefix), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, value, "must be a valid seccomp profile")}
}

func validAppArmorAnnotationValue(value string) bool {
	return value == "" || value == v1.DeprecatedAppArmorBetaProfileRuntimeDefault ||
		value == v1.DeprecatedAppArmorBetaProfileNameUnconfined ||
		strings.HasPrefix(value, v1.DeprecatedAppArmorBetaProfileNamePrefix)
}

func specHasContainer(spec *v1.PodSpec, name string) bool {
	found := false
	visitContainers(spec, field.NewPath("spec"), func(c *v1.Container, _ *field.Path) {
		found = found || c.Name == name
	})
	return found
}

// validatePodOnly holds the checks the API server makes on a Pod but not on
// a pod template.
func validatePodOnly(pod *v1.Pod, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	spec := &pod.Spec
	if spec.ServiceAccountName == "" {
		for vi, vol := range spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for _, group := range []struct {
		name       string
		containers []v1.Container
	}{{"containers", spec.Containers}, {"initContainers", spec.InitContainers}} {
		for i := range group.containers {
			allErrs = append(allErrs, validateImageWhitespace(group.containers[i].Image, specPath.Child(group.name).Index(i).Child("image"))...)
		}
	}
	if len(spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if spec.NodeName != "" && len(spec.SchedulingGates) != 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	allErrs = append(allErrs, validateSeccompAnnotationsMatchFields(pod, specPath)...)
	return allErrs
}

func validateImageWhitespace(image string, fldPath *field.Path) field.ErrorList {
	if len(image) != len(strings.TrimSpace(image)) {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// validateSeccompAnnotationsMatchFields rejects a pod whose legacy seccomp
// annotations contradict its seccompProfile fields.
func validateSeccompAnnotationsMatchFields(pod *v1.Pod, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if value, ok := pod.Annotations[v1.SeccompPodAnnotationKey]; ok {
			if err := seccompMatch(value, sc.SeccompProfile, specPath.Child("securityContext", "seccompProfile")); err != nil {
				allErrs = append(allErrs, err)
			}
		}
	}
	visitContainers(&pod.Spec, specPath, func(c *v1.Container, cPath *field.Path) {
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			return
		}
		if value, ok := pod.Annotations[v1.SeccompContainerAnnotationKeyPrefix+c.Name]; ok {
			if err := seccompMatch(value, c.SecurityContext.SeccompProfile, cPath.Child("securityContext", "seccompProfile")); err != nil {
				allErrs = append(allErrs, err)
			}
		}
	})
	return allErrs
}

func seccompMatch(annotation string, profile *v1.SeccompProfile, fldPath *field.Path) *field.Error {
	const mismatch = "seccomp type in annotation and field must match"
	switch profile.Type {
	case v1.SeccompProfileTypeUnconfined:
		if annotation != v1.SeccompProfileNameUnconfined {
			return field.Forbidden(fldPath.Child("type"), mismatch)
		}
	case v1.SeccompProfileTypeRuntimeDefault:
		if annotation != v1.SeccompProfileRuntimeDefault && annotation != v1.DeprecatedSeccompProfileDockerDefault {
			return field.Forbidden(fldPath.Child("type"), mismatch)
		}
	case v1.SeccompProfileTypeLocalhost:
		if !strings.HasPrefix(annotation, v1.SeccompLocalhostProfileNamePrefix) {
			return field.Forbidden(fldPath.Child("type"), mismatch)
		}
		if profile.LocalhostProfile == nil || strings.TrimPrefix(annotation, v1.SeccompLocalhostProfileNamePrefix) != *profile.LocalhostProfile {
			return field.Forbidden(fldPath.Child("localhostProfile"), "seccomp profile in annotation and field must match")
		}
	}
	return nil
}

// visitContainers calls fn for every init, regular and ephemeral container
// with its field path.
func visitContainers(spec *v1.PodSpec, specPath *field.Path, fn func(c *v1.Container, path *field.Path)) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		fn((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), specPath.Child("ephemeralContainers").Index(i))
	}
}
