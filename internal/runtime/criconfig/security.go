package criconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Paths hidden or made read-only under /proc and /sys unless procMount is
// Unmasked (kept in step with the container engines' defaults).
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// effectiveSecurityContext overlays the container's security context on the
// fields the pod-level one provides (SELinux, Windows options, run-as).
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	eff := &v1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff.SELinuxOptions = psc.SELinuxOptions
		eff.WindowsOptions = psc.WindowsOptions
		eff.RunAsUser = psc.RunAsUser
		eff.RunAsGroup = psc.RunAsGroup
		eff.RunAsNonRoot = psc.RunAsNonRoot
	}
	csc := c.SecurityContext
	if csc == nil {
		return eff
	}
	if csc.SELinuxOptions != nil {
		eff.SELinuxOptions = csc.SELinuxOptions
	}
	if csc.WindowsOptions != nil {
		eff.WindowsOptions = csc.WindowsOptions
	}
	if csc.Capabilities != nil {
		eff.Capabilities = csc.Capabilities
	}
	if csc.Privileged != nil {
		eff.Privileged = csc.Privileged
	}
	if csc.RunAsUser != nil {
		eff.RunAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		eff.RunAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		eff.RunAsNonRoot = csc.RunAsNonRoot
	}
	if csc.ReadOnlyRootFilesystem != nil {
		eff.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem
	}
	if csc.AllowPrivilegeEscalation != nil {
		eff.AllowPrivilegeEscalation = csc.AllowPrivilegeEscalation
	}
	if csc.ProcMount != nil {
		eff.ProcMount = csc.ProcMount
	}
	return eff
}

// VerifyRunAsNonRoot refuses a container that must not run as root but
// would: runAsUser 0, or no runAsUser and an image user that is 0 or not
// numeric. imageUID and imageUsername describe the image's configured user.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, imageUID *int64, imageUsername string) error {
	sc := effectiveSecurityContext(pod, c)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", PodDesc(pod), c.Name)
		}
		return nil
	}
	switch {
	case imageUID != nil && *imageUID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", PodDesc(pod), c.Name)
	case imageUID == nil && imageUsername != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", imageUsername, PodDesc(pod), c.Name)
	}
	return nil
}

// containerSecurityContext translates the effective security context, the
// pod's groups and namespaces, and the seccomp and AppArmor profiles.
func (o *Options) containerSecurityContext(pod *v1.Pod, c *v1.Container, in *ContainerInputs, ns *runtimeapi.NamespaceOption) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := effectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:     capabilities(eff.Capabilities),
		SelinuxOptions:   seLinux(eff.SELinuxOptions),
		NamespaceOptions: ns,
		NoNewPrivs:       eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation,
		MaskedPaths:      maskedPaths(eff.ProcMount),
		ReadonlyPaths:    readonlyPaths(eff.ProcMount),
	}
	if eff.Privileged != nil {
		sc.Privileged = *eff.Privileged
	}
	if eff.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *eff.ReadOnlyRootFilesystem
	}
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	} else {
		if in.ImageUID != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *in.ImageUID}
		}
		sc.RunAsUsername = in.ImageUsername
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	groups, policy, err := supplementalGroups(pod.Spec.SecurityContext)
	if err != nil {
		return nil, err
	}
	sc.SupplementalGroups, sc.SupplementalGroupsPolicy = groups, policy
	if sc.Seccomp, err = o.seccompProfile(pod.Spec.SecurityContext, c.SecurityContext); err != nil {
		return nil, err
	}
	if sc.Apparmor, sc.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	return sc, nil
}

func capabilities(c *v1.Capabilities) *runtimeapi.Capability {
	if c == nil {
		return nil
	}
	out := &runtimeapi.Capability{
		AddCapabilities:  make([]string, len(c.Add)),
		DropCapabilities: make([]string, len(c.Drop)),
	}
	for i, v := range c.Add {
		out.AddCapabilities[i] = string(v)
	}
	for i, v := range c.Drop {
		out.DropCapabilities[i] = string(v)
	}
	return out
}

func seLinux(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

func maskedPaths(pm *v1.ProcMountType) []string {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}
	}
	return append([]string(nil), defaultMaskedPaths...)
}

func readonlyPaths(pm *v1.ProcMountType) []string {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}
	}
	return append([]string(nil), defaultReadonlyPaths...)
}

// supplementalGroups lists fsGroup first, then spec supplementalGroups.
func supplementalGroups(psc *v1.PodSecurityContext) ([]int64, runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil {
		return nil, runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	groups = append(groups, psc.SupplementalGroups...)
	policy := runtimeapi.SupplementalGroupsPolicy_Merge
	if psc.SupplementalGroupsPolicy != nil {
		v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
		if !ok {
			return nil, 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
		}
		policy = runtimeapi.SupplementalGroupsPolicy(v)
	}
	return groups, policy, nil
}

// seccompProfile picks the container's profile, else the pod's, else
// RuntimeDefault with SeccompDefault or Unconfined without.
func (o *Options) seccompProfile(psc *v1.PodSecurityContext, csc *v1.SecurityContext) (*runtimeapi.SecurityProfile, error) {
	var p *v1.SeccompProfile
	switch {
	case csc != nil && csc.SeccompProfile != nil:
		p = csc.SeccompProfile
	case psc != nil && psc.SeccompProfile != nil:
		p = psc.SeccompProfile
	case o.SeccompDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost")
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(orDefault(o.SeccompProfileRoot, DefaultSeccompProfileRoot), *p.LocalhostProfile),
		}, nil
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
}

// appArmorProfile picks the container field, else the deprecated per-container
// annotation (static pods may still use it), else the pod field. It returns
// the profile and its legacy string form; nil when none applies.
func appArmorProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	var p *v1.AppArmorProfile
	switch {
	case c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil:
		p = c.SecurityContext.AppArmorProfile
	default:
		if v, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
			p = appArmorFromAnnotation(v)
		}
		if p == nil && pod.Spec.SecurityContext != nil {
			p = pod.Spec.SecurityContext.AppArmorProfile
		}
	}
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	default:
		return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
	}
}

func appArmorFromAnnotation(v string) *v1.AppArmorProfile {
	switch {
	case v == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
	case v == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}

// namespaceOptions are the pod's Linux namespaces: namespaceModes plus the
// user namespace.
func (o *Options) namespaceOptions(pod *v1.Pod) (*runtimeapi.NamespaceOption, error) {
	ns := namespaceModes(pod)
	userns, err := o.userNamespace(pod)
	if err != nil {
		return nil, err
	}
	ns.UsernsOptions = userns
	return ns, nil
}

// namespaceModes are the node's namespaces where host* asks for them, else
// the pod's, with a PID namespace per container unless shareProcessNamespace.
func namespaceModes(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

func (o *Options) userNamespace(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	if o.UserNamespace == nil {
		return nil, errors.New("pod asks for hostUsers=false but this kubelet does not support user namespaces")
	}
	// The manager's errors are upstream's messages, reported as they are
	// ("can't set `spec.hostUsers: false`, runtime does not support user
	// namespaces").
	return o.UserNamespace(pod)
}
