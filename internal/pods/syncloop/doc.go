// Package syncloop owns the kubelet's main loop: one goroutine selecting
// over config updates, runtime (PLEG) events, probe result changes, the
// sync tick and the housekeeping tick, handing each to a Handler.
// Iteration is a plain function of its channels so a test can drive it.
// The Dispatcher admits pods, feeds the pod workers and sizes the QoS
// cgroups for the active pods; its housekeeping restarts pods whose UID came
// back while they stopped and reports upstream's pod counts (counts.go).
//
// Invariants: the loop never blocks on a pod's sync (pod workers do that);
// orphaned pods are only killed once every source has been seen.
package syncloop
