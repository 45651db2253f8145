// Package stats serves the kubelet's Summary API (/stats/summary) and the
// resource metrics (/metrics/resource): node figures come from procfs, the
// cgroup tree and statfs, pod and container figures from the CRI, with the
// pod's own cgroup and network namespace filling what the runtime leaves out.
// Pod volumes the kubelet keeps on disk are walked du-style in the
// background (volumes.go); a Summary only reads their last samples, so it
// never waits for a walk, and a volume is reported once first measured.
package stats
