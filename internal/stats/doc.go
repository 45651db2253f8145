// Package stats serves the kubelet's Summary API (/stats/summary) and the
// resource metrics (/metrics/resource): node figures come from procfs, the
// cgroup tree and statfs, pod and container figures from the CRI, with the
// pod's own cgroup and network namespace filling what the runtime leaves out.
package stats
