// Package backoff holds upstream's per-key back-off settings (crash-looping
// containers, failed image pulls, failed volume set-up) on client-go's
// flowcontrol.Backoff, which does the arithmetic, and the one helper the
// kubelet needs beyond it: how long a key must still wait.
//
// Invariants: a key's delay starts at the initial value, doubles on each
// failure up to the maximum, and starts again once the key has been quiet
// for twice the maximum (a container that ran cleanly for ten minutes
// starts again at 10s); time is always the injected clock.
package backoff
