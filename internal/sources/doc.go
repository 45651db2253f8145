// Package sources owns the kubelet's pod sources (static pod files, a static
// pod URL, and any snapshot producer such as the API server informer) and the
// mux that turns per-source snapshots into ordered, incremental PodUpdates.
//
// Invariants: a source always publishes the full set of its pods; the mux keys
// pods by UID and emits nothing when a snapshot changes nothing.
package sources
