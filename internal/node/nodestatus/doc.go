// Package nodestatus owns the kubelet's Node object: it builds the Node to
// register, computes its status from plain Inputs (pure functions), and runs
// the controller that registers it and patches its status to the API server.
//
// Invariants: deciding (NewNode, SetStatus, Reconcile, ShouldReport) never
// talks to the API server; the controller only patches status and the labels
// and annotations the kubelet owns, never the spec of an existing Node.
package nodestatus
