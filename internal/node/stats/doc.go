// Package stats serves the kubelet's Summary API (/stats/summary) and the
// resource metrics (/metrics/resource): node figures come from procfs, the
// cgroup tree and statfs, pod and container figures from the CRI, with the
// pod's own cgroup and network namespace filling what the runtime leaves out.
// Pod volumes the kubelet keeps on disk are walked du-style in the
// background (volumes.go); a Summary only reads their last samples, so it
// never waits for a walk, and a volume is reported once first measured.
//
// Host facts (meminfo, pid limits, the cgroup layout, a process's cgroups)
// come from hostinfo. The per-scrape counters are still parsed here
// (procfs.go): prometheus/procfs gives /proc/stat's CPU times as float
// seconds (not the exact tick counts), /proc/net/dev as a map (losing the
// interface order cAdvisor reports), and no task count from /proc/loadavg.
package stats
