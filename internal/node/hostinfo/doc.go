// Package hostinfo reads the facts about the machine the kubelet runs on,
// in one place: machine and boot IDs, system UUID, kernel release, OS
// image, CPU count, memory (/proc/meminfo), huge pages, pid limits, swap,
// the mount table (/proc/self/mountinfo), the cgroup layout and a process's
// cgroups. Everyone who needs one of these asks a Host.
//
// Parsing is left to maintained parsers: prometheus/procfs (meminfo,
// /proc/<pid>/cgroup, swaps), moby/sys/mountinfo (the mount table, with
// its octal escapes) and k8s.io/utils/cpuset (CPU lists). What is still
// read here by hand has no parser in the module graph and is one value per
// file (IDs, pid_max, nr_hugepages) or a KEY=value list (os-release), as
// cAdvisor reads them too.
//
// Invariants: a Host only reads, below its Root ("/" for Local), so tests
// run on a temporary tree; Machine is read once at start-up and passed on.
package hostinfo
