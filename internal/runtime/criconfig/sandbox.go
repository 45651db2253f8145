package criconfig

import (
	"fmt"
	"maps"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxConfig translates pod into the config of its sandbox for the given
// attempt. The warnings are for the pod's events; the config is usable with
// them.
func SandboxConfig(pod *v1.Pod, attempt uint32, o Options) (*runtimeapi.PodSandboxConfig, []Warning, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:       SandboxLabels(pod),
		Annotations:  maps.Clone(pod.Annotations),
		LogDirectory: PodLogDir(o.PodLogsDir, pod.Namespace, pod.Name, pod.UID),
		PortMappings: PortMappings(pod),
	}
	dns, warnings, err := PodDNSConfig(pod, o)
	if err != nil {
		return nil, nil, fmt.Errorf("dns config: %w", err)
	}
	cfg.DnsConfig = dns
	if !pod.Spec.HostNetwork {
		// A host-network pod keeps the node's hostname.
		hostname, domain, err := PodHostnameAndDomain(pod, o.ClusterDomain)
		if err != nil {
			return nil, nil, err
		}
		if cfg.Hostname, err = kernelHostname(pod, hostname, domain); err != nil {
			return nil, nil, err
		}
	}
	if cfg.Linux, err = o.sandboxLinux(pod); err != nil {
		return nil, nil, err
	}
	return cfg, warnings, nil
}

func (o *Options) sandboxLinux(pod *v1.Pod) (*runtimeapi.LinuxPodSandboxConfig, error) {
	ns, err := o.namespaceOptions(pod)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: ns,
		Privileged:       hasPrivilegedContainer(pod),
		// The pause container runs confined so pods may use strict profiles.
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	sysctls := map[string]string{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		for _, s := range psc.Sysctls {
			sysctls[s.Name] = s.Value
		}
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SelinuxOptions = seLinux(psc.SELinuxOptions)
	}
	if sc.SupplementalGroups, sc.SupplementalGroupsPolicy, err = supplementalGroups(pod.Spec.SecurityContext); err != nil {
		return nil, err
	}
	return &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    o.CgroupParent,
		SecurityContext: sc,
		Sysctls:         sysctls,
		Resources:       o.sandboxResources(pod),
		Overhead:        o.overheadResources(pod),
	}, nil
}

func hasPrivilegedContainer(pod *v1.Pod) bool {
	privileged := func(sc *v1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if privileged(pod.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if privileged(pod.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

// PortMappings lists the ports of the pod's regular containers for the
// sandbox, as upstream does: every declared port (runtimes skip those
// without a hostPort), a port repeated within a container counted once.
func PortMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for i := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range pod.Spec.Containers[i].Ports {
			key := p.Name
			if key == "" {
				key = fmt.Sprintf("%s-%s-%s:%d:%d", ipFamily(p.HostIP), p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func ipFamily(ip string) string {
	if ip == "" {
		return "any"
	}
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
		return "v6"
	}
	return "v4"
}

func protocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}
