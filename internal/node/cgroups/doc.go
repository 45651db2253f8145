// Package cgroups is upstream's container manager (pkg/kubelet/cm): the
// kubelet's cgroup tree. Setup settles the cgroup driver with the runtime
// and checks the host (cgroup v1, systemd); the Manager owns the node
// allocatable cgroup (<cgroupRoot>/kubepods), the QoS cgroups below it
// (burstable, besteffort; sized by the sync loop for the active pods), one
// cgroup per pod (pod<uid>), and the watcher that turns the kernel's OOM
// reports into node events.
//
// Invariants: what a cgroup should hold (ResourceConfig) is decided by pure
// functions of the pod specs and the node's capacity; only Manager writes
// cgroupfs, and only below the kubepods cgroup plus the reserved cgroups the
// configuration names. Names are driver-neutral (Name) until written; the
// cgroupfs and systemd spellings are translations of the same Name. A pod
// cgroup is removed only when no known pod and no runtime pod owns its UID.
// Where the hierarchies are mounted is hostinfo's (Cgroups); NewFS takes it.
//
// The cgroup files (files.go) are written here rather than through
// github.com/opencontainers/cgroups (runc's fs/fs2 managers): linking them
// adds about 600 KB to the stripped binary (logrus, dbus, securejoin and
// every controller, measured with v0.0.6), and the kubelet writes only a
// handful of files (cpu shares/weight, CFS quota, memory and pids limits,
// cpuset copies) whose v1/v2 translations fit in files.go.
package cgroups
