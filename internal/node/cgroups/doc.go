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
// cgroups (through FS; with the systemd driver through systemd), and only
// below the kubepods cgroup plus the reserved cgroups the configuration
// names. Names are driver-neutral (Name) until written; the
// cgroupfs and systemd spellings are translations of the same Name. A pod
// cgroup is removed only when no known pod and no runtime pod owns its UID.
// Where the hierarchies are mounted is hostinfo's (Cgroups); NewFS takes it.
//
// With the cgroupfs driver the cgroup files (files.go) are written here
// rather than through github.com/opencontainers/cgroups' fs/fs2 managers:
// the kubelet writes only a handful of files (cpu shares/weight, CFS quota,
// memory and pids limits, cpuset copies) whose v1/v2 translations fit in
// files.go. With the systemd driver systemd must own the slices, so
// creating, updating and removing them goes through the library's systemd
// managers (systemd.go), as upstream and runc do: transient slice units
// over D-Bus, then the same values in the files. That link costs about
// 0.8 MB of the stripped binary (go-systemd, godbus, logrus, the fs/fs2
// controllers; measured with v0.0.6).
package cgroups
