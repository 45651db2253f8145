package podspec

import (
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	restartPolicies   = []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	dnsPolicies       = []v1.DNSPolicy{v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone}
	preemptPolicies   = []v1.PreemptionPolicy{v1.PreemptLowerPriority, v1.PreemptNever}
	taintEffects      = []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}
	tolerationOps     = []v1.TolerationOperator{v1.TolerationOpEqual, v1.TolerationOpExists}
	maxDNSNameservers = 3
	maxDNSSearches    = 32
	maxDNSSearchChars = 2048
)

// validatePodSpec checks a pod spec the way the API server's pod spec
// validation does, for the parts that matter to a node.
func validatePodSpec(spec *v1.PodSpec, podName string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, errs := validateVolumes(spec.Volumes, podName, fldPath.Child("volumes"))
	allErrs = append(allErrs, errs...)
	claimNames, errs := validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))
	allErrs = append(allErrs, errs...)
	pc := &podContext{
		volumes:       vols,
		claimNames:    claimNames,
		gracePeriod:   spec.TerminationGracePeriodSeconds,
		restartPolicy: spec.RestartPolicy,
		hostUsers:     spec.HostUsers == nil || *spec.HostUsers,
	}
	allErrs = append(allErrs, validateContainers(spec.Containers, pc, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, pc, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateEphemeralContainers(spec.EphemeralContainers, spec, pc, fldPath.Child("ephemeralContainers"))...)
	allErrs = append(allErrs, validatePodResources(spec, claimNames, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateHostNetworkPorts(spec, fldPath)...)
	allErrs = append(allErrs, validateEnum(spec.RestartPolicy, restartPolicies, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, dnsPolicies, fldPath.Child("dnsPolicy"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	allErrs = append(allErrs, validateImagePullSecrets(spec.ImagePullSecrets, fldPath.Child("imagePullSecrets"))...)
	allErrs = append(allErrs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, gate := range spec.ReadinessGates {
		allErrs = append(allErrs, validateQualifiedName(string(gate.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	allErrs = append(allErrs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	allErrs = append(allErrs, validateHostUsers(spec, fldPath)...)
	if spec.ServiceAccountName != "" {
		allErrs = append(allErrs, validateName(spec.ServiceAccountName, apivalidation.ValidateServiceAccountName, false, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		allErrs = append(allErrs, validateName(spec.NodeName, apivalidation.NameIsDNSSubdomain, false, fldPath.Child("nodeName"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateHostAliases(spec.HostAliases, fldPath.Child("hostAliases"))...)
	if spec.PriorityClassName != "" {
		allErrs = append(allErrs, validateName(spec.PriorityClassName, apivalidation.NameIsDNSSubdomain, false, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		allErrs = append(allErrs, validateName(*spec.RuntimeClassName, apivalidation.NameIsDNSSubdomain, false, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		allErrs = append(allErrs, validateEnum(*spec.PreemptionPolicy, preemptPolicies, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.Overhead != nil {
		allErrs = append(allErrs, validateResourceRequirements(&v1.ResourceRequirements{Limits: spec.Overhead}, validateContainerResourceName, nil, fldPath.Child("overhead"))...)
	}
	allErrs = append(allErrs, validateOS(spec, fldPath)...)
	return allErrs
}

// validatePodResourceClaims checks spec.resourceClaims and returns the
// claim names containers may reference.
func validatePodResourceClaims(claims []v1.PodResourceClaim, fldPath *field.Path) (map[string]bool, field.ErrorList) {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, claim := range claims {
		p := fldPath.Index(i)
		switch {
		case claim.Name == "":
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		case names[claim.Name]:
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), claim.Name))
		default:
			allErrs = append(allErrs, validateDNS1123Label(claim.Name, p.Child("name"))...)
			names[claim.Name] = true
		}
		switch {
		case claim.ResourceClaimName != nil && claim.ResourceClaimTemplateName != nil:
			allErrs = append(allErrs, field.Invalid(p, claim, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		case claim.ResourceClaimName == nil && claim.ResourceClaimTemplateName == nil:
			allErrs = append(allErrs, field.Invalid(p, claim, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if claim.ResourceClaimName != nil {
			allErrs = append(allErrs, validateName(*claim.ResourceClaimName, apivalidation.NameIsDNSSubdomain, false, p.Child("resourceClaimName"))...)
		}
		if claim.ResourceClaimTemplateName != nil {
			allErrs = append(allErrs, validateName(*claim.ResourceClaimTemplateName, apivalidation.NameIsDNSSubdomain, false, p.Child("resourceClaimTemplateName"))...)
		}
	}
	return names, allErrs
}

// validateImagePullSecrets allows only a name in each reference (the only
// field the type has).
func validateImagePullSecrets(secrets []v1.LocalObjectReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, s := range secrets {
		if s != (v1.LocalObjectReference{Name: s.Name}) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), s, "only name may be set"))
		}
	}
	return allErrs
}

// validateDNSConfig checks spec.dnsConfig against libc resolver limits; with
// dnsPolicy None it must name at least one nameserver.
func validateDNSConfig(cfg *v1.PodDNSConfig, policy v1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == v1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", v1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", v1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		allErrs = append(allErrs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearches {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearches)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchChars {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchChars)))
	}
	for i, search := range cfg.Searches {
		if search == "." {
			continue
		}
		trimmed := strings.TrimSuffix(search, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(trimmed) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("searches").Index(i), trimmed, msg))
		}
	}
	for i, opt := range cfg.Options {
		if opt.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return allErrs
}

func validateSchedulingGates(gates []v1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, g := range gates {
		allErrs = append(allErrs, validateQualifiedName(g.Name, fldPath.Index(i))...)
		if seen[g.Name] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen[g.Name] = true
	}
	return allErrs
}

func validateTolerations(tolerations []v1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != v1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case v1.TolerationOpEqual, "":
			if msgs := content.IsLabelValue(t.Value); len(msgs) != 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case v1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOps))
		}
		if t.Effect != "" && !containsValue(taintEffects, t.Effect) {
			allErrs = append(allErrs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
	}
	return allErrs
}

func validateHostAliases(aliases []v1.HostAlias, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, a := range aliases {
		allErrs = append(allErrs, validation.IsValidIP(fldPath.Index(i).Child("ip"), a.IP)...)
		for j, host := range a.Hostnames {
			allErrs = append(allErrs, validateDNS1123Subdomain(host, fldPath.Index(i).Child("hostnames").Index(j))...)
		}
	}
	return allErrs
}
