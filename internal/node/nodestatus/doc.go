// Package nodestatus owns the kubelet's Node object: it builds the Node to
// register, computes its status from plain Inputs (pure functions) that a
// Source gathers from the runtime, PLEG and the eviction manager, runs the
// controller that registers it and patches its status to the API server,
// and keeps the Node the rest of the kubelet reads (Latest).
//
// Invariants: deciding (NewNode, SetStatus, Reconcile, ShouldReport) never
// talks to the API server; the controller only patches status and the labels
// and annotations the kubelet owns, never the spec of an existing Node.
package nodestatus
