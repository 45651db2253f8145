package admission

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ReasonSysctlForbidden is the status reason of a pod whose sysctls are
// neither safe nor allowed by allowedUnsafeSysctls.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the sysctls upstream v1.36 lets every pod set: namespaced
// and without effect on other pods. Some are namespaced only from a kernel
// version on; on older kernels they are not safe.
var safeSysctls = []struct{ name, minKernel string }{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", minKernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", minKernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", minKernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", minKernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", minKernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", minKernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", minKernel: "4.15"},
}

// SafeSysctls returns the safe sysctls for a kernel release (`uname -r`);
// an unparsable release keeps only those safe on every kernel. It is pure.
func SafeSysctls(kernelRelease string) []string {
	kv, _ := version.ParseGeneric(kernelRelease)
	var out []string
	for _, s := range safeSysctls {
		if s.minKernel == "" || (kv != nil && kv.AtLeast(version.MustParseGeneric(s.minKernel))) {
			out = append(out, s.name)
		}
	}
	return out
}

// A sysctl pattern: segments as in a sysctl name, the last of which may end
// with '*'.
var sysctlPatternRe = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

const sysctlMaxLength = 253

// SysctlAllowlist admits pods whose sysctls are all allowed.
type SysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewSysctlAllowlist builds the allowlist from sysctl names and patterns
// ending in '*' (the safe set plus allowedUnsafeSysctls). A malformed
// pattern, or one not known to be namespaced, is an error.
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > sysctlMaxLength || !sysctlPatternRe.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPatternRe)
		}
		ns, name, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", name)
		}
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// check reports why sysctl may not be set, or nil. A sysctl of a namespace
// the pod shares with the host is refused.
func (w *SysctlAllowlist) check(sysctl string, hostNet, hostIPC bool) error {
	sysctl = utilsysctl.NormalizeName(sysctl)
	ns, found := w.names[sysctl]
	if !found {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(sysctl, p) {
				ns, found = pns, true
				break
			}
		}
	}
	if !found {
		return fmt.Errorf("%q not allowlisted", sysctl)
	}
	if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) {
		return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
	}
	return nil
}

// Admit checks the pod's sysctls. It is pure.
func (w *SysctlAllowlist) Admit(pod *v1.Pod) Result {
	if pod.Spec.SecurityContext == nil {
		return Result{Admit: true}
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return Result{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return Result{Admit: true}
}
