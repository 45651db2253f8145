// Package backoff holds the kubelet's retry pacing on the libraries that do
// the arithmetic: upstream's per-key back-off settings (crash-looping
// containers, failed image pulls, failed volume set-up) on client-go's
// flowcontrol.Backoff, with Remaining (how long a key must still wait),
// and, for retry loops, Doubling (apimachinery's wait.Backoff) and Sleep
// (a wait on the injected clock that ends with the context).
//
// Invariants: a key's delay starts at the initial value, doubles on each
// failure up to the maximum, and starts again once the key has been quiet
// for twice the maximum (a container that ran cleanly for ten minutes
// starts again at 10s); time is always the injected clock.
package backoff
