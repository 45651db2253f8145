package podspec

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

type resourceNameFn func(name v1.ResourceName, fldPath *field.Path) field.ErrorList

func sortedResourceNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// validateResourceRequirements checks names and quantities, and that each
// request fits its limit (equals it, for resources that cannot overcommit).
func validateResourceRequirements(r *v1.ResourceRequirements, nameFn resourceNameFn, claimNames map[string]bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, name := range sortedResourceNames(r.Limits) {
		q := r.Limits[name]
		p := limPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, validateQuantity(name, q, p)...)
		hugePages = hugePages || podutil.IsHugePageResourceName(name)
		allErrs = append(allErrs, validateHugePageQuantity(name, q, p)...)
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
	}
	for _, name := range sortedResourceNames(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, validateQuantity(name, q, p)...)
		if limit, ok := r.Limits[name]; ok {
			switch {
			case q.Cmp(limit) != 0 && !podutil.IsOvercommitAllowed(name):
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			case q.Cmp(limit) > 0:
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !podutil.IsOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		hugePages = hugePages || podutil.IsHugePageResourceName(name)
		allErrs = append(allErrs, validateHugePageQuantity(name, q, p)...)
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
	}
	if hugePages && !cpuOrMemory {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return append(allErrs, validateResourceClaims(r.Claims, claimNames, fldPath.Child("claims"))...)
}

// validateQuantity rejects negative quantities, and fractions of resources
// counted in whole units (extended resources).
func validateQuantity(name v1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), isNegativeErrorMsg))
	}
	if podutil.IsExtendedResourceName(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return allErrs
}

// validateHugePageQuantity requires a whole number of pages.
func validateHugePageQuantity(name v1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if !podutil.IsHugePageResourceName(name) {
		return nil
	}
	page, err := resource.ParseQuantity(strings.TrimPrefix(string(name), v1.ResourceHugePagesPrefix))
	if err != nil || page.Value() <= 0 || q.Value()%page.Value() != 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
	}
	return nil
}

func standardContainerResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage || podutil.IsHugePageResourceName(name)
}

// validateContainerResourceName allows cpu, memory, ephemeral-storage, huge
// pages, Kubernetes-prefixed and extended resources.
func validateContainerResourceName(name v1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(string(name), fldPath); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") {
		if !standardContainerResource(name) {
			return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource for containers")}
		}
		return nil
	}
	if !podutil.IsNativeResource(name) && !podutil.IsExtendedResourceName(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

// validatePodResourceName allows only what spec.resources supports.
func validatePodResourceName(name v1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(string(name), fldPath); len(errs) > 0 {
		return errs
	}
	if !resourcehelper.IsSupportedPodLevelResource(name) {
		return field.ErrorList{field.NotSupported(fldPath, name, sets.List(resourcehelper.SupportedPodLevelResources()))}
	}
	return nil
}

// validateResourceClaims requires each claim a container uses to be one of
// the pod's resourceClaims, referenced once.
func validateResourceClaims(claims []v1.ResourceClaim, podClaims map[string]bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, claim := range claims {
		p := fldPath.Index(i)
		if claim.Name == "" {
			allErrs = append(allErrs, field.Required(p, ""))
			continue
		}
		key := claim.Name
		if claim.Request != "" {
			allErrs = append(allErrs, validateDNS1123Label(claim.Request, p.Child("request"))...)
			key += "/" + claim.Request
		}
		if seen[key] || seen[claim.Name] {
			allErrs = append(allErrs, field.Duplicate(p, key))
		}
		seen[key] = true
		if !podClaims[claim.Name] {
			notFound := field.NotFound(p, claim.Name)
			notFound.Detail = "must be one of the names in pod.spec.resourceClaims"
			allErrs = append(allErrs, notFound)
		}
	}
	return allErrs
}

// validatePodResources checks spec.resources: supported names, requests
// within limits, requests covering what the containers request, and no
// container limit above the pod's.
func validatePodResources(spec *v1.PodSpec, claimNames map[string]bool, fldPath *field.Path) field.ErrorList {
	r := spec.Resources
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if r.Claims != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	allErrs = append(allErrs, validateResourceRequirements(&v1.ResourceRequirements{Limits: r.Limits, Requests: r.Requests}, validatePodResourceName, claimNames, fldPath)...)
	aggregate := aggregateRequests(spec)
	for _, name := range sortedResourceNames(aggregate) {
		podRequest, ok := r.Requests[name]
		if !ok {
			continue
		}
		if want := aggregate[name]; want.Cmp(podRequest) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(string(name)), podRequest.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", want.String())))
		}
	}
	for i, c := range spec.Containers {
		for _, name := range sortedResourceNames(c.Resources.Limits) {
			podLimit, ok := r.Limits[name]
			if limit := c.Resources.Limits[name]; ok && limit.Cmp(podLimit) > 0 {
				// The API server reports this at spec.resources.containers[i][name].limits.
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Key(string(name)).Child("limits"), limit.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", podLimit.String())))
			}
		}
	}
	return allErrs
}
