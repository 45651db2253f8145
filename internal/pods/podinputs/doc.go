// Package podinputs owns the pod inputs that come from the API server: config
// maps and secrets behind a per-object TTL cache, the docker-links style
// service variables, registry credentials from imagePullSecrets, and service
// account tokens from the TokenRequest API.
// Invariants: a cached object is served until its TTL runs out; a NotFound
// is re-checked on every read; credential matching is credentialprovider's keyring (upstream's);
// a cached token is renewed at 80% of its lifetime or 24 h, and served past
// a failed renewal only until it expires.
package podinputs
