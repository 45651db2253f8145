// Package podinputs owns the pod inputs that come from the API server: config
// maps and secrets behind a per-object TTL cache, the docker-links style
// service variables, and registry credentials from imagePullSecrets.
// Invariants: a cached object is served until its TTL runs out; a NotFound
// is re-checked on every read; credential matching follows upstream's keyring.
package podinputs
