// Package mirror owns the mirror pods of static pods: the read-only copies
// the kubelet creates in the API server so the control plane can see pods
// that came from files or URLs.
//
// Invariants: a mirror pod carries the static pod's hash in its
// kubernetes.io/config.mirror annotation and is owned by the Node; deletes
// are preconditioned on the mirror pod's UID so a newer mirror is never hit.
package mirror
