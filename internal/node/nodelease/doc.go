// Package nodelease owns the node's heartbeat Lease in kube-node-lease: it
// creates it (held by the node, owned by its Node once the UID is known)
// and renews it every interval, backing off while the API server fails.
//
// Invariant: only the renew time and a missing owner reference are ever
// changed on an existing lease.
package nodelease
