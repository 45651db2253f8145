// Package podspec owns what the node does to a pod spec before acting on it:
// defaulting (the values a v1.36 API server fills in) and create-time
// validation (the checks it makes), for pods that never passed through an API
// server, such as static pods read from files or URLs.
//
// Invariants: SetDefaults only fills unset fields and is idempotent; Validate
// never mutates its input and names fields as the API server does.
package podspec
