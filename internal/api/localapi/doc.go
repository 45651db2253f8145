// Package localapi serves a standalone node to kubectl: a small, honest
// subset of the Kubernetes API (discovery, pods with logs, exec, attach and
// port-forward, events, the local ConfigMaps and Secrets, the node itself)
// computed from the kubelet's own state, where writes edit the manifest
// files the file source reads.
// Invariants: it owns no pod state (every answer is read from the pod
// manager, status manager, workers, local object store and event ring);
// a manifest is validated as the file source will validate it before it is
// written, and written whole (temporary file, rename); what the kubelet
// cannot honour answers with the API server's Status shapes.
package localapi
