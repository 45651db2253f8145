// Package statusmanager (upstream's status manager) owns the pod statuses
// the kubelet reports: the latest status of every pod it runs, kept for
// readers (the HTTP API) and, in cluster mode, sent to the API server — to
// the pod, a static pod's mirror pod, or a pod admission rejected (Targets).
//
// Invariants: a stored status never moves a pod out of a terminal phase;
// readers get copies, never the stored value.
package statusmanager
