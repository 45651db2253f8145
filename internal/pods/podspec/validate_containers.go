package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// podContext is what container validation needs to know about the pod.
type podContext struct {
	volumes       map[string]v1.VolumeSource
	claimNames    map[string]bool
	gracePeriod   *int64
	restartPolicy v1.RestartPolicy
	hostUsers     bool
}

var (
	containerRestartPolicies = []v1.ContainerRestartPolicy{
		v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever,
	}
	restartRuleActions   = []v1.ContainerRestartRuleAction{v1.ContainerRestartRuleActionRestart}
	restartRuleOperators = []v1.ContainerRestartRuleOnExitCodesOperator{
		v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn,
	}
	terminationMessagePolicies = []v1.TerminationMessagePolicy{v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError}
	pullPolicies               = []v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}
	portProtocols              = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
	httpSchemes                = []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}
	resizeResources            = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
	resizeRestartPolicies      = []v1.ResourceResizeRestartPolicy{v1.NotRequired, v1.RestartContainer}
)

const (
	maxRestartPolicyRules = 20
	maxRestartRuleValues  = 255
)

// validateContainers checks the regular containers: at least one, unique
// names, and probes and lifecycle hooks (which only they and sidecars may
// have).
func validateContainers(containers []v1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i := range containers {
		c := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, pc, path)...)
		if names[c.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
		}
		names[c.Name] = true
		allErrs = append(allErrs, validateProbesAndLifecycle(c, pc, path)...)
		allErrs = append(allErrs, validateContainerRestartPolicy(c, containerRestartPolicies, false, path)...)
	}
	return append(allErrs, hostPortConflicts(containers, fldPath)...)
}

// validateInitContainers checks init containers. Names must be unique across
// init and regular containers; only restartable init containers (sidecars,
// restartPolicy Always) may have probes and lifecycle hooks.
func validateInitContainers(inits, regular []v1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for _, c := range regular {
		names[c.Name] = true
	}
	for i := range inits {
		c := &inits[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, pc, path)...)
		allErrs = append(allErrs, validateContainerRestartPolicy(c, containerRestartPolicies, true, path)...)
		if names[c.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
		// Init containers run one at a time, so their host ports only need
		// to be unique within each of them.
		allErrs = append(allErrs, hostPortConflicts([]v1.Container{*c}, fldPath)...)
		if podutil.IsRestartableInitContainer(c) {
			allErrs = append(allErrs, validateProbesAndLifecycle(c, pc, path)...)
			continue
		}
		const notSidecar = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("lifecycle"), notSidecar))
		}
		for _, p := range []struct {
			name  string
			probe *v1.Probe
		}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
			if p.probe != nil {
				allErrs = append(allErrs, field.Forbidden(path.Child(p.name), notSidecar))
			}
		}
	}
	return allErrs
}

// validateEphemeralContainers checks debug containers: unique names across
// all containers, an existing non-ephemeral target, and none of the fields
// an ephemeral container may not have.
func validateEphemeralContainers(ephemeral []v1.EphemeralContainer, spec *v1.PodSpec, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	others, all := map[string]bool{}, map[string]bool{}
	for _, list := range [][]v1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range list {
			others[c.Name] = true
			all[c.Name] = true
		}
	}
	const notEphemeral = "cannot be set for an Ephemeral Container"
	for i := range ephemeral {
		ec := &ephemeral[i]
		path := fldPath.Index(i)
		c := (*v1.Container)(&ec.EphemeralContainerCommon)
		allErrs = append(allErrs, validateContainerCommon(c, pc, path)...)
		allErrs = append(allErrs, validateImageWhitespace(c.Image, path.Child("image"))...)
		if all[ec.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ec.Name))
		}
		all[ec.Name] = true
		if ec.TargetContainerName != "" && !others[ec.TargetContainerName] {
			allErrs = append(allErrs, field.NotFound(path.Child("targetContainerName"), ec.TargetContainerName))
		}
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(c.Ports) > 0},
			{"resources", len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 || len(c.Resources.Claims) > 0},
			{"resizePolicy", len(c.ResizePolicy) > 0},
			{"restartPolicy", c.RestartPolicy != nil},
			{"restartPolicyRules", len(c.RestartPolicyRules) > 0},
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
			{"lifecycle", c.Lifecycle != nil},
		} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(path.Child(f.name), notEphemeral))
			}
		}
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(path.Child("volumeMounts").Index(j).Child("subPath"), notEphemeral))
			}
			if m.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(path.Child("volumeMounts").Index(j).Child("subPathExpr"), notEphemeral))
			}
		}
	}
	return allErrs
}

// validateContainerCommon applies the checks shared by every container kind.
func validateContainerCommon(c *v1.Container, pc *podContext, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(path.Child("name"), ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(c.Name, path.Child("name"))...)
	}
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(path.Child("image"), ""))
	}
	allErrs = append(allErrs, validateEnum(c.TerminationMessagePolicy, terminationMessagePolicies, path.Child("terminationMessagePolicy"))...)
	allErrs = append(allErrs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, path.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, pc.volumes, path.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateVolumeDevices(c, pc.volumes, path.Child("volumeDevices"))...)
	allErrs = append(allErrs, validatePullPolicy(c.ImagePullPolicy, path.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResourceRequirements(&c.Resources, validateContainerResourceName, pc.claimNames, path.Child("resources"))...)
	allErrs = append(allErrs, validateResizePolicy(c.ResizePolicy, pc.restartPolicy, path.Child("resizePolicy"))...)
	allErrs = append(allErrs, validateSecurityContext(c.SecurityContext, pc.hostUsers, path.Child("securityContext"))...)
	return allErrs
}

func validatePullPolicy(policy v1.PullPolicy, fldPath *field.Path) field.ErrorList {
	return validateEnum(policy, pullPolicies, fldPath)
}

// validateContainerRestartPolicy checks a container's own restartPolicy and
// restartPolicyRules. Rules need an explicit container restartPolicy, and a
// sidecar (init container with Always) takes none.
func validateContainerRestartPolicy(c *v1.Container, allowed []v1.ContainerRestartPolicy, isInit bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	policyPath := path.Child("restartPolicy")
	if c.RestartPolicy != nil {
		allErrs = append(allErrs, validateEnum(*c.RestartPolicy, allowed, policyPath)...)
	}
	rules := c.RestartPolicyRules
	if len(rules) == 0 {
		return allErrs
	}
	rulesPath := path.Child("restartPolicyRules")
	if c.RestartPolicy == nil {
		allErrs = append(allErrs, field.Required(policyPath, "must be specified when restartPolicyRules are used"))
	}
	if isInit && podutil.IsRestartableInitContainer(c) {
		allErrs = append(allErrs, field.Forbidden(rulesPath, "may not be set for init containers with restartPolicy=Always"))
	}
	if len(rules) > maxRestartPolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxRestartPolicyRules))
	}
	for i, rule := range rules {
		rulePath := rulesPath.Index(i)
		allErrs = append(allErrs, validateEnum(rule.Action, restartRuleActions, rulePath.Child("action"))...)
		if rule.ExitCodes == nil {
			allErrs = append(allErrs, field.Required(rulePath.Child("exitCodes"), "must be specified"))
			continue
		}
		codesPath := rulePath.Child("exitCodes")
		allErrs = append(allErrs, validateEnum(rule.ExitCodes.Operator, restartRuleOperators, codesPath.Child("operator"))...)
		if len(rule.ExitCodes.Values) > maxRestartRuleValues {
			allErrs = append(allErrs, field.TooMany(codesPath.Child("values"), len(rule.ExitCodes.Values), maxRestartRuleValues))
		}
		seen := map[int32]bool{}
		for j, v := range rule.ExitCodes.Values {
			if seen[v] {
				allErrs = append(allErrs, field.Duplicate(codesPath.Child("values").Index(j), v))
			}
			seen[v] = true
		}
	}
	return allErrs
}

func validateContainerPorts(ports []v1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), port.Name, msg))
				}
			} else if names[port.Name] {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		allErrs = append(allErrs, validateEnum(port.Protocol, portProtocols, idxPath.Child("protocol"))...)
	}
	return allErrs
}

// hostPortConflicts reports a host port that two ports of the given
// containers claim with the same protocol and host IP.
func hostPortConflicts(containers []v1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for ci, c := range containers {
		for pi, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
			if seen[key] {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return allErrs
}

func validateResizePolicy(policies []v1.ContainerResizePolicy, podRestart v1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[v1.ResourceName]bool{}
	for i, p := range policies {
		if seen[p.ResourceName] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		allErrs = append(allErrs, validateEnum(p.ResourceName, resizeResources, fldPath)...)
		allErrs = append(allErrs, validateEnum(p.RestartPolicy, resizeRestartPolicies, fldPath)...)
		if podRestart == v1.RestartPolicyNever && p.RestartPolicy != v1.NotRequired {
			allErrs = append(allErrs, field.Invalid(fldPath, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return allErrs
}

// validateHostNetworkPorts requires, for a host-network pod, that each
// container port is published on the same host port.
func validateHostNetworkPorts(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var allErrs field.ErrorList
	for i, c := range spec.Containers {
		for j, p := range c.Ports {
			if p.HostPort != p.ContainerPort {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return allErrs
}
