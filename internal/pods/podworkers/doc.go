// Package podworkers owns the per-pod goroutines. Each pod moves one way
// through syncing → terminating → terminated; updates are coalesced so the
// newest wins, and a pod is never synced by two goroutines at once. It also
// says which pods are active (hold node resources) and lets a Kill wait
// for the pod's termination (Update.Terminated).
//
// Invariants: at most one worker per UID; a pod whose full name is still
// held by another, not yet terminated, pod (an edited static pod) waits
// until that pod has terminated before it starts; a pod added again (Create)
// under the UID of a pod asked to stop is not restarted in place: the worker
// finishes the termination and reports RestartRequested, and housekeeping
// forgets it and starts the pod afresh.
package podworkers
