// Package eviction owns the kubelet's node-pressure eviction manager: it
// turns a stats summary into eviction signals (memory.available,
// nodefs/imagefs available and inodesFree, pid.available), decides which
// configured thresholds are met, reports MemoryPressure/DiskPressure/
// PIDPressure, reclaims node-level resources (containers, images) and then
// evicts at most one pod per monitoring interval, ranked as upstream does,
// through the pod workers (Killer), waiting until the pod is terminated;
// with localStorageCapacityIsolation it first evicts, each round, every pod
// over its emptyDir sizeLimits or ephemeral-storage limits (localstorage.go).
//
// Invariants: parsing, observing, deciding, ranking and messages are pure
// functions over values and an explicit time; only Manager and Killer act
// (GC, kills, events, metrics). Critical pods (static, mirror,
// system-critical priority) are never evicted and always admitted.
package eviction
