// Package backoff owns per-key exponential back-off with an injected clock,
// as the kubelet uses it for crash-looping containers and failed image pulls.
//
// Invariants: a key's delay starts at Initial, doubles on each failure up to
// Max, and is forgotten once the key has been quiet for 2*Max (so a
// container that ran cleanly for ten minutes starts again at Initial).
package backoff
