package criconfig

import (
	"bytes"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// HostsFile is the /etc/hosts the kubelet mounts into the pod's containers.
// For a pod network it lists localhost, the IPv6 names, each pod IP with
// "<hostname>.<domain>\t<hostname>" (or the bare hostname without a
// subdomain), then spec.hostAliases. A hostNetwork pod gets the node's hosts
// file (Options.HostsPath) under its own header, plus its host aliases.
func HostsFile(pod *v1.Pod, podIPs []string, o Options) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		path := orDefault(o.HostsPath, DefaultHostsPath)
		node, err := o.readFile(path)
		if err != nil {
			return nil, fmt.Errorf("read node hosts file %s: %w", path, err)
		}
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(node)
		writeHostAliases(&b, pod.Spec.HostAliases)
		return b.Bytes(), nil
	}
	hostname, domain, err := PodHostnameAndDomain(pod, o.ClusterDomain)
	if err != nil {
		return nil, err
	}
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	writeHostAliases(&b, pod.Spec.HostAliases)
	return b.Bytes(), nil
}

func writeHostAliases(b *bytes.Buffer, aliases []v1.HostAlias) {
	if len(aliases) == 0 {
		return
	}
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
}
