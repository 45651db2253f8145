package podspec

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

var (
	fsGroupChangePolicies     = []v1.PodFSGroupChangePolicy{v1.FSGroupChangeAlways, v1.FSGroupChangeOnRootMismatch}
	supplementalGroupPolicies = []v1.SupplementalGroupsPolicy{v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict}
	seLinuxChangePolicies     = []v1.PodSELinuxChangePolicy{v1.SELinuxChangePolicyMountOption, v1.SELinuxChangePolicyRecursive}
	procMountTypes            = []v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}
	seccompProfileTypes       = []v1.SeccompProfileType{v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined}
	appArmorProfileTypes      = []v1.AppArmorProfileType{v1.AppArmorProfileTypeLocalhost, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined}
	osNames                   = []v1.OSName{v1.Linux, v1.Windows}
)

// A sysctl name is dot- (or slash-) separated lower-case segments.
const (
	sysctlSegmentFmt = `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
	sysctlNameFmt    = `(` + sysctlSegmentFmt + `[\./])*` + sysctlSegmentFmt
	sysctlMaxLength  = 253
)

var sysctlNameRe = regexp.MustCompile(`^` + sysctlNameFmt + `$`)

// validatePodSecurityContext checks spec.securityContext and the host
// namespace fields beside it.
func validatePodSecurityContext(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateGroupID(sc.FSGroup, fldPath.Child("fsGroup"))...)
	allErrs = append(allErrs, validateUserID(sc.RunAsUser, fldPath.Child("runAsUser"))...)
	allErrs = append(allErrs, validateGroupID(sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	for i := range sc.SupplementalGroups {
		allErrs = append(allErrs, validateGroupID(&sc.SupplementalGroups[i], fldPath.Child("supplementalGroups").Index(i))...)
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		// The API server keeps shareProcessNamespace in the pod security
		// context internally and reports it there.
		allErrs = append(allErrs, field.Invalid(fldPath.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	allErrs = append(allErrs, validateSysctls(spec, fldPath.Child("sysctls"))...)
	if sc.FSGroupChangePolicy != nil {
		allErrs = append(allErrs, validateEnum(*sc.FSGroupChangePolicy, fsGroupChangePolicies, fldPath.Child("fsGroupChangePolicy"))...)
	}
	if sc.SupplementalGroupsPolicy != nil {
		allErrs = append(allErrs, validateEnum(*sc.SupplementalGroupsPolicy, supplementalGroupPolicies, fldPath.Child("supplementalGroupsPolicy"))...)
	}
	if sc.SELinuxChangePolicy != nil {
		allErrs = append(allErrs, validateEnum(*sc.SELinuxChangePolicy, seLinuxChangePolicies, fldPath.Child("seLinuxChangePolicy"))...)
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	allErrs = append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return allErrs
}

func validateSysctls(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, s := range spec.SecurityContext.Sysctls {
		namePath := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRe.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRe)))
		case seen[s.Name]:
			allErrs = append(allErrs, field.Duplicate(namePath, s.Name))
		}
		seen[s.Name] = true
		switch ns, _, _ := utilsysctl.GetNamespace(s.Name); {
		case spec.HostNetwork && ns == utilsysctl.NetNamespace:
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == utilsysctl.IPCNamespace:
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return allErrs
}

func validateUserID(id *int64, fldPath *field.Path) field.ErrorList {
	if id == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidUserID(*id) {
		allErrs = append(allErrs, field.Invalid(fldPath, *id, msg))
	}
	return allErrs
}

func validateGroupID(id *int64, fldPath *field.Path) field.ErrorList {
	if id == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidGroupID(*id) {
		allErrs = append(allErrs, field.Invalid(fldPath, *id, msg))
	}
	return allErrs
}

// validateSecurityContext checks a container's securityContext.
func validateSecurityContext(sc *v1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateUserID(sc.RunAsUser, fldPath.Child("runAsUser"))...)
	allErrs = append(allErrs, validateGroupID(sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	if sc.ProcMount != nil {
		if !containsValue(procMountTypes, *sc.ProcMount) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("procMount"), *sc.ProcMount, procMountTypes))
		}
		if hostUsers && *sc.ProcMount == v1.UnmaskedProcMount {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("procMount"), *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && containsValue(sc.Capabilities.Add, "CAP_SYS_ADMIN") {
			allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}
	allErrs = append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return allErrs
}

func validateSeccompProfile(p *v1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var allErrs field.ErrorList
	if p.Type == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	} else if !containsValue(seccompProfileTypes, p.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), p.Type, seccompProfileTypes))
	}
	switch {
	case p.Type == v1.SeccompProfileTypeLocalhost && p.LocalhostProfile == nil:
		allErrs = append(allErrs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case p.Type == v1.SeccompProfileTypeLocalhost:
		allErrs = append(allErrs, validateLocalDescendingPath(*p.LocalhostProfile, fldPath.Child("localhostProfile"))...)
	case p.LocalhostProfile != nil:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), *p.LocalhostProfile, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

const maxAppArmorProfileLength = 4095

func validateAppArmorProfile(p *v1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var allErrs field.ErrorList
	local := fldPath.Child("localhostProfile")
	switch p.Type {
	case v1.AppArmorProfileTypeLocalhost:
		switch {
		case p.LocalhostProfile == nil || *p.LocalhostProfile == "":
			allErrs = append(allErrs, field.Required(local, "must be set when AppArmor type is Localhost"))
		case strings.TrimSpace(*p.LocalhostProfile) != *p.LocalhostProfile:
			allErrs = append(allErrs, field.Invalid(local, *p.LocalhostProfile, "must not be padded with whitespace"))
		case len(*p.LocalhostProfile) > maxAppArmorProfileLength:
			allErrs = append(allErrs, field.TooLong(local, "", maxAppArmorProfileLength))
		}
	case v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			allErrs = append(allErrs, field.Invalid(local, *p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), p.Type, appArmorProfileTypes))
	}
	return allErrs
}

// validateHostUsers forbids host namespaces in a pod with its own user
// namespace (hostUsers: false).
func validateHostUsers(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var allErrs field.ErrorList
	const msg = "when `pod.Spec.HostUsers` is false"
	if spec.HostNetwork {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostNetwork"), msg))
	}
	if spec.HostPID {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostPID"), msg))
	}
	if spec.HostIPC {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostIPC"), msg))
	}
	return allErrs
}

// validateOS checks spec.os and the fields that the named OS rules out.
func validateOS(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.OS == nil {
		return nil
	}
	osPath := fldPath.Child("os")
	if spec.OS.Name == "" {
		return field.ErrorList{field.Required(osPath.Child("name"), "cannot be empty")}
	}
	if !containsValue(osNames, spec.OS.Name) {
		return field.ErrorList{field.NotSupported(osPath, spec.OS.Name, osNames)}
	}
	if spec.OS.Name == v1.Linux {
		return validateLinuxOnly(spec, fldPath)
	}
	return validateWindowsOnly(spec, fldPath)
}

func validateLinuxOnly(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	const msg = "windows options cannot be set for a linux pod"
	if spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("securityContext", "windowsOptions"), msg))
	}
	visitContainers(spec, fldPath, func(c *v1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("securityContext", "windowsOptions"), msg))
		}
	})
	return allErrs
}

type setField struct {
	name string
	set  bool
}

func forbidSet(fields []setField, fldPath *field.Path, msg string) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range fields {
		if f.set {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(f.name), msg))
		}
	}
	return allErrs
}

func validateWindowsOnly(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	const msg = "cannot be set for a windows pod"
	allErrs := forbidSet([]setField{
		{"hostUsers", spec.HostUsers != nil},
		{"hostPID", spec.HostPID},
		{"hostIPC", spec.HostIPC},
		{"shareProcessNamespace", spec.ShareProcessNamespace != nil},
	}, fldPath, msg)
	if sc := spec.SecurityContext; sc != nil {
		allErrs = append(allErrs, forbidSet([]setField{
			{"appArmorProfile", sc.AppArmorProfile != nil},
			{"seLinuxOptions", sc.SELinuxOptions != nil},
			{"seccompProfile", sc.SeccompProfile != nil},
			{"fsGroup", sc.FSGroup != nil},
			{"fsGroupChangePolicy", sc.FSGroupChangePolicy != nil},
			{"sysctls", len(sc.Sysctls) > 0},
			{"runAsUser", sc.RunAsUser != nil},
			{"runAsGroup", sc.RunAsGroup != nil},
			{"supplementalGroups", sc.SupplementalGroups != nil},
			{"supplementalGroupsPolicy", sc.SupplementalGroupsPolicy != nil},
			{"seLinuxChangePolicy", sc.SELinuxChangePolicy != nil},
		}, fldPath.Child("securityContext"), msg)...)
	}
	visitContainers(spec, fldPath, func(c *v1.Container, p *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		allErrs = append(allErrs, forbidSet([]setField{
			{"appArmorProfile", sc.AppArmorProfile != nil},
			{"seLinuxOptions", sc.SELinuxOptions != nil},
			{"seccompProfile", sc.SeccompProfile != nil},
			{"capabilities", sc.Capabilities != nil},
			{"readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem != nil},
			{"privileged", sc.Privileged != nil},
			{"allowPrivilegeEscalation", sc.AllowPrivilegeEscalation != nil},
			{"procMount", sc.ProcMount != nil},
			{"runAsUser", sc.RunAsUser != nil},
			{"runAsGroup", sc.RunAsGroup != nil},
		}, p.Child("securityContext"), msg)...)
	})
	return allErrs
}
