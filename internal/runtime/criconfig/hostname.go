package criconfig

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// hostnameMaxLen is the kernel's 64-byte nodename less its NUL.
	hostnameMaxLen = 63
	// fqdnMaxLen is the longest FQDN setHostnameAsFQDN can put in the nodename.
	fqdnMaxLen = 64
)

// PodHostnameAndDomain returns the pod's short hostname (spec.hostname or the
// pod name, truncated to 63 characters without a trailing '-' or '.') and its
// domain (<subdomain>.<namespace>.svc.<clusterDomain>, or "" without a
// subdomain). spec.hostnameOverride, when set, is the hostname as is (bar
// truncation) and there is no domain.
func PodHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if pod.Spec.HostnameOverride != nil {
		h := *pod.Spec.HostnameOverride
		if msgs := validation.IsDNS1123Subdomain(h); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod hostnameOverride %q is not a valid DNS subdomain: %s", h, strings.Join(msgs, ";"))
		}
		h, err = truncateHostname(pod.Name, h)
		return h, "", err
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	if truncated == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return truncated, nil
}

// kernelHostname is what the sandbox's UTS namespace is named: the short
// hostname, or hostname.domain when setHostnameAsFQDN asks for it.
func kernelHostname(pod *v1.Pod, hostname, domain string) (string, error) {
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > fqdnMaxLen {
		return "", fmt.Errorf("FQDN %s is too long for the pod hostname (%d characters is the max, %d requested)", fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}
