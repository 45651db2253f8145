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
package cgroups
