package criconfig

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits the API server enforces on a pod's DNS config, and so the kubelet
// on the config it composes.
const (
	MaxDNSNameservers     = 3
	MaxDNSSearchPaths     = 32
	MaxDNSSearchListChars = 2048
)

// clusterFirstOptions are the options of a ClusterFirst pod's resolv.conf.
var clusterFirstOptions = []string{"ndots:5"}

// ResolvConf is a parsed resolv.conf.
type ResolvConf struct {
	Nameservers []string // every nameserver line, in order
	Searches    []string // the last search line, trailing dots and "." dropped
	Options     []string // the last options line
}

// ParseResolvConf parses resolv.conf content the way the upstream kubelet
// does: '#' comment lines are skipped, nameservers accumulate, the last
// search and options lines win.
func ParseResolvConf(data []byte) (ResolvConf, error) {
	rc := ResolvConf{Nameservers: []string{}, Searches: []string{}, Options: []string{}}
	var errs []error
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				errs = append(errs, errors.New("nameserver list is empty"))
				continue
			}
			rc.Nameservers = append(rc.Nameservers, fields[1])
		case "search":
			rc.Searches = []string{}
			for _, s := range fields[1:] {
				if s != "." {
					rc.Searches = append(rc.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			rc.Options = slices.Clone(fields[1:])
		}
	}
	return rc, errors.Join(errs...)
}

type dnsMode int

const (
	dnsCluster dnsMode = iota
	dnsHost
	dnsNone
)

func podDNSMode(pod *v1.Pod) dnsMode {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return dnsNone
	case v1.DNSDefault:
		return dnsHost
	case v1.DNSClusterFirst, "":
		// A host-network pod cannot reach the cluster DNS by default.
		if pod.Spec.HostNetwork {
			return dnsHost
		}
		return dnsCluster
	default: // ClusterFirstWithHostNet, and anything unknown as upstream does
		return dnsCluster
	}
}

// PodDNSConfig composes the pod's resolv.conf per its dnsPolicy merged with
// spec.dnsConfig, trimmed to the API limits. A ClusterFirst pod on a kubelet
// without clusterDNS falls back to Default with a MissingClusterDNS warning;
// trimming gives a DNSConfigForming warning.
func PodDNSConfig(pod *v1.Pod, o Options) (*runtimeapi.DNSConfig, []Warning, error) {
	host := ResolvConf{}
	if o.ResolvConf != "" {
		data, err := o.readFile(o.ResolvConf)
		if err != nil {
			return nil, nil, fmt.Errorf("read resolv.conf %s: %w", o.ResolvConf, err)
		}
		if host, err = ParseResolvConf(data); err != nil {
			return nil, nil, fmt.Errorf("parse resolv.conf %s: %w", o.ResolvConf, err)
		}
	}
	cfg := &runtimeapi.DNSConfig{Servers: host.Nameservers, Searches: host.Searches, Options: host.Options}
	var warnings []Warning
	mode := podDNSMode(pod)
	if mode == dnsCluster && len(o.ClusterDNS) == 0 {
		warnings = append(warnings, Warning{Reason: ReasonMissingClusterDNS, Message: fmt.Sprintf(
			"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			PodDesc(pod), v1.DNSClusterFirst, v1.DNSDefault)})
		mode = dnsHost
	}
	switch mode {
	case dnsNone:
		cfg = &runtimeapi.DNSConfig{}
	case dnsCluster:
		cfg.Servers = slices.Clone(o.ClusterDNS)
		cfg.Searches = clusterSearches(pod.Namespace, o.ClusterDomain, host.Searches)
		cfg.Options = slices.Clone(clusterFirstOptions)
	case dnsHost:
		if o.ResolvConf == "" {
			// No host resolver: point at the node's own, like a libc without
			// nameserver lines would.
			cfg.Servers = loopbackServers(o.HostIPs)
			cfg.Searches = []string{"."}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = dedupe(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = dedupe(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	var w []Warning
	cfg.Servers, w = fitNameservers(cfg.Servers)
	warnings = append(warnings, w...)
	cfg.Searches, w = fitSearches(cfg.Searches)
	warnings = append(warnings, w...)
	return cfg, warnings, nil
}

func clusterSearches(namespace, clusterDomain string, hostSearches []string) []string {
	if clusterDomain == "" {
		return slices.Clone(hostSearches)
	}
	s := []string{namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
	return dedupe(append(s, hostSearches...))
}

func loopbackServers(hostIPs []string) []string {
	var out []string
	for _, ip := range hostIPs {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
			out = append(out, "::1")
		} else {
			out = append(out, "127.0.0.1")
		}
	}
	if len(out) == 0 {
		out = []string{"127.0.0.1"}
	}
	return out
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOptions overlays the pod's options on the base ones by name,
// keeping the base order and appending new names in the pod's order.
func mergeDNSOptions(base []string, pod []v1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, op := range base {
		name, value, _ := strings.Cut(op, ":")
		set(name, value)
	}
	for _, op := range pod {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		set(op.Name, value)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if values[n] != "" {
			out = append(out, n+":"+values[n])
		} else {
			out = append(out, n)
		}
	}
	return out
}

func fitNameservers(servers []string) ([]string, []Warning) {
	if len(servers) <= MaxDNSNameservers {
		return servers, nil
	}
	servers = servers[:MaxDNSNameservers]
	return servers, []Warning{{Reason: ReasonDNSConfigForming, Message: fmt.Sprintf(
		"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(servers, " "))}}
}

func fitSearches(searches []string) ([]string, []Warning) {
	trimmed := false
	if len(searches) > MaxDNSSearchPaths {
		searches = searches[:MaxDNSSearchPaths]
		trimmed = true
	}
	// Some resolvers abort on a search path longer than a DNS name may be.
	kept := make([]string, 0, len(searches))
	for _, s := range searches {
		if len(s) > validation.DNS1123SubdomainMaxLength {
			trimmed = true
			continue
		}
		kept = append(kept, s)
	}
	searches = kept
	for len(searches) > 0 && len(strings.Join(searches, " ")) > MaxDNSSearchListChars {
		searches = searches[:len(searches)-1]
		trimmed = true
	}
	if !trimmed {
		return searches, nil
	}
	return searches, []Warning{{Reason: ReasonDNSConfigForming, Message: fmt.Sprintf(
		"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(searches, " "))}}
}

// PodDesc formats a pod the way kubelet messages name it: name_namespace(uid).
func PodDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
