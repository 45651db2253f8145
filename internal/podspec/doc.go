// Package podspec owns what the node does to a pod spec before acting on it:
// defaulting (the values the API server would fill in) and validation (the
// checks the API server would make), for pods that never passed through an
// API server, such as static pods read from files or URLs.
//
// Invariants: SetDefaults is idempotent; Validate never mutates its input.
package podspec
