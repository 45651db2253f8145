// Package podstatus computes a pod's API status (phase, conditions,
// container statuses) from its spec and the runtime's view of it.
//
// Invariants: Generate is pure; a terminal phase (Succeeded, Failed) never
// goes back; a condition's lastTransitionTime changes only when its status does.
package podstatus
