// Package pleg owns the pod lifecycle event generator: it turns the
// runtime's state into per-pod events (container started, died, removed),
// by relisting through a pure old/new diff and, where the runtime offers
// it, from the CRI container event stream so exits are seen at once. Each
// relist sets the running pods and containers metrics.
//
// Invariants: Diff is pure; Healthy turns false when relisting stalls for
// longer than the threshold.
package pleg
