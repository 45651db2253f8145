// Package podmanager (upstream's pod manager) owns the desired pods: every pod the sources want on this
// node, by UID and by full name (namespace/name).
//
// Invariants: one entry per UID; the full-name index always points at a
// pod that is in the UID index.
package podmanager
