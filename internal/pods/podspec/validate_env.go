package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Downward API field paths an environment variable may read.
var envFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// Field labels the v1 downward API knows at all; anything else fails
// conversion before the per-use allow lists are consulted.
var downwardAPIFieldLabels = map[string]bool{
	"metadata.annotations": true, "metadata.labels": true, "metadata.name": true,
	"metadata.namespace": true, "metadata.uid": true, "spec.nodeName": true,
	"spec.restartPolicy": true, "spec.serviceAccountName": true, "spec.schedulerName": true,
	"status.phase": true, "status.hostIP": true, "status.hostIPs": true,
	"status.podIP": true, "status.podIPs": true,
}

// Container resources the downward API exposes, plus the huge-page prefixes.
var (
	resourceFieldPaths    = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}
	resourceFieldPrefixes = []string{"limits.hugepages-", "requests.hugepages-"}
	cpuDivisors           = map[string]bool{"1m": true, "1": true}
	byteDivisors          = map[string]bool{
		"1": true, "1k": true, "1M": true, "1G": true, "1T": true, "1P": true, "1E": true,
		"1Ki": true, "1Mi": true, "1Gi": true, "1Ti": true, "1Pi": true, "1Ei": true,
	}
)

// validateEnvVarName applies the v1.34+ rule: any printable ASCII but '='.
func validateEnvVarName(name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsRelaxedEnvVarName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateEnv(vars []v1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			allErrs = append(allErrs, validateEnvVarName(ev.Name, idxPath.Child("name"))...)
		}
		allErrs = append(allErrs, validateEnvVarSource(ev, idxPath.Child("valueFrom"))...)
	}
	return allErrs
}

// validateEnvVarSource requires exactly one source in valueFrom, and no
// literal value beside it.
func validateEnvVarSource(ev v1.EnvVar, fldPath *field.Path) field.ErrorList {
	src := ev.ValueFrom
	if src == nil {
		return nil
	}
	var allErrs field.ErrorList
	count := 0
	if src.FieldRef != nil {
		count++
		allErrs = append(allErrs, validateObjectFieldSelector(src.FieldRef, envFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if src.ResourceFieldRef != nil {
		count++
		allErrs = append(allErrs, validateResourceFieldSelector(src.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if src.ConfigMapKeyRef != nil {
		count++
		allErrs = append(allErrs, validateKeySelector(src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if src.SecretKeyRef != nil {
		count++
		allErrs = append(allErrs, validateKeySelector(src.SecretKeyRef.Name, src.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if src.FileKeyRef != nil {
		count++
		allErrs = append(allErrs, validateFileKeySelector(src.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case count == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case count > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

// validateKeySelector checks a configMapKeyRef or secretKeyRef.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := validateName(name, apivalidation.NameIsDNSSubdomain, false, fldPath.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), key, msg))
	}
	return allErrs
}

func validateFileKeySelector(s *v1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	allErrs := required(s.VolumeName, fldPath.Child("volumeName"))
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	} else {
		allErrs = append(allErrs, validateLocalNonReservedPath(s.Path, fldPath.Child("path"))...)
	}
	if s.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		allErrs = append(allErrs, validateEnvVarName(s.Key, fldPath.Child("key"))...)
	}
	return allErrs
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (path, subscript string, ok bool) {
	trimmed, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	path, subscript, found = strings.Cut(trimmed, "['")
	if !found || path == "" {
		return "", "", false
	}
	return path, subscript, true
}

// validateObjectFieldSelector checks a downward API fieldRef against the
// field paths its use allows.
func validateObjectFieldSelector(fs *v1.ObjectFieldSelector, allowed []string, fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: unsupported pod version: "+fs.APIVersion)}
	}
	if path, subscript, ok := splitSubscript(fs.FieldPath); ok {
		switch path {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: field label does not support subscript: "+fs.FieldPath)}
	}
	if !downwardAPIFieldLabels[fs.FieldPath] {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: field label not supported: "+fs.FieldPath)}
	}
	if !containsValue(allowed, fs.FieldPath) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), fs.FieldPath, allowed)}
	}
	return nil
}

// validateResourceFieldSelector checks a downward API resourceFieldRef; in a
// volume it must name its container.
func validateResourceFieldSelector(fs *v1.ResourceFieldSelector, inVolume bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case inVolume && fs.ContainerName == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("resource"), ""))
	case !containsValue(resourceFieldPaths, fs.Resource) && !hasAnyPrefix(fs.Resource, resourceFieldPrefixes):
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("resource"), fs.Resource, resourceFieldPaths))
	}
	if fs.Divisor.IsZero() {
		return allErrs
	}
	divisor := fs.Divisor.String()
	switch {
	case fs.Resource == "limits.cpu" || fs.Resource == "requests.cpu":
		if !cpuDivisors[divisor] {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case containsValue(resourceFieldPaths, fs.Resource) || hasAnyPrefix(fs.Resource, resourceFieldPrefixes):
		if !byteDivisors[divisor] {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with this resource"))
		}
	}
	return allErrs
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// validateEnvFrom requires one source per entry and a valid prefix.
func validateEnvFrom(sources []v1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ef := range sources {
		idxPath := fldPath.Index(i)
		if ef.Prefix != "" {
			allErrs = append(allErrs, validateEnvVarName(ef.Prefix, idxPath.Child("prefix"))...)
		}
		count := 0
		if ef.ConfigMapRef != nil {
			count++
			allErrs = append(allErrs, validateEnvFromName(ef.ConfigMapRef.Name, idxPath.Child("configMapRef", "name"))...)
		}
		if ef.SecretRef != nil {
			count++
			allErrs = append(allErrs, validateEnvFromName(ef.SecretRef.Name, idxPath.Child("secretRef", "name"))...)
		}
		// The API server reports these at the list, not the entry.
		switch {
		case count == 0:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case count > 1:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateEnvFromName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return validateName(name, apivalidation.NameIsDNSSubdomain, true, fldPath)
}

var (
	mountPropagations   = []v1.MountPropagationMode{v1.MountPropagationBidirectional, v1.MountPropagationHostToContainer, v1.MountPropagationNone}
	recursiveReadOnlies = []v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled}
)

// validateVolumeMounts checks that each mount names a pod volume, has a
// unique mount path, and uses subPath and propagation legally.
func validateVolumeMounts(c *v1.Container, volumes map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	devicePaths := map[string]bool{}
	deviceNames := map[string]bool{}
	for _, d := range c.VolumeDevices {
		devicePaths[d.DevicePath] = true
		deviceNames[d.Name] = true
	}
	mountPaths := map[string]bool{}
	for i, m := range c.VolumeMounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		_, found := volumes[m.Name]
		if !found {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		}
		if mountPaths[m.MountPath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths[m.MountPath] = true
		if deviceNames[m.Name] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		if devicePaths[m.MountPath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		// Image volumes take subPath and subPathExpr since v1.33.
		// The API server reports subPath problems without the mount index
		// (spec.containers[0].volumeMounts.subPath); so do we.
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			propPath := idxPath.Child("mountPropagation")
			if !containsValue(mountPropagations, *m.MountPropagation) {
				allErrs = append(allErrs, field.NotSupported(propPath, *m.MountPropagation, mountPropagations))
			}
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if *m.MountPropagation == v1.MountPropagationBidirectional && !privileged {
				allErrs = append(allErrs, field.Forbidden(propPath, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		allErrs = append(allErrs, validateRecursiveReadOnly(m, idxPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

func validateRecursiveReadOnly(m v1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch *m.RecursiveReadOnly {
	case v1.RecursiveReadOnlyDisabled:
	case v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, *m.RecursiveReadOnly, recursiveReadOnlies))
	}
	return allErrs
}

// validateVolumeDevices checks raw block devices: each names a claim-backed
// volume, with unique names and paths that do not clash with the mounts.
func validateVolumeDevices(c *v1.Container, volumes map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountNames := map[string]bool{}
	mountPaths := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mountNames[m.Name] = true
		mountPaths[m.MountPath] = true
	}
	names, paths := map[string]bool{}, map[string]bool{}
	for i, d := range c.VolumeDevices {
		idxPath := fldPath.Index(i)
		if d.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		if names[d.Name] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), d.Name, "must be unique"))
		}
		if src, ok := volumes[d.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), d.Name))
		} else if src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("devicePath"), ""))
		}
		if paths[d.DevicePath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, idxPath)) > 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths[d.DevicePath] = true
		}
		if mountNames[d.Name] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if mountPaths[d.DevicePath] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			names[d.Name] = true
		}
	}
	return allErrs
}
