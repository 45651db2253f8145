// Package podspec owns what the node does to a pod spec before acting on it:
// defaulting (the values a v1.36 API server fills in), create-time
// validation (the checks it makes) for pods that never passed through an API
// server, such as static pods read from files or URLs, and the
// classification of every pod spec field (fields.go): honoured, delegated
// to others, rejected at admission, failing its container, waiting or
// warned about.
//
// Invariants: SetDefaults only fills unset fields and is idempotent; Validate
// never mutates its input and names fields as the API server does; every
// field of the walked v1 types is in Fields (a test walks the Go types).
package podspec
