package podspec

import (
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	isNegativeErrorMsg = apivalidation.IsNegativeErrorMsg
	fileModeErrorMsg   = "must be a number between 0 and 0777 (octal), both inclusive"
)

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range content.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// validateName applies a name rule (such as NameIsDNSSubdomain) to a value.
func validateName(value string, nameFn apivalidation.ValidateNameFunc, prefix bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range nameFn(value, prefix) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(value, fldPath)
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validatePathNoBacksteps rejects a path with a ".." element.
func validatePathNoBacksteps(target string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalDescendingPath requires a relative path without "..".
func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(target) {
		allErrs = append(allErrs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(target, fldPath)...)
}

// validateLocalNonReservedPath also rejects a path starting with "..".
func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(target, fldPath)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		allErrs = append(allErrs, field.Invalid(fldPath, target, "must not start with '..'"))
	}
	return allErrs
}

// validateEnum reports Required for an empty value and NotSupported for one
// outside allowed.
func validateEnum[T ~string](value T, allowed []T, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !slices.Contains(allowed, value) {
		return field.ErrorList{field.NotSupported(fldPath, value, allowed)}
	}
	return nil
}
