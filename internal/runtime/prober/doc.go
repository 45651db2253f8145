// Package prober runs container liveness, readiness and startup probes
// (exec, httpGet, tcpSocket, grpc) on a per-container schedule, applies
// success/failure thresholds, counts them in upstream's prober_* metrics,
// and sends result changes on Updates for the sync loop to sync the pod.
//
// Invariants: a result is changed only by a worker of the container's
// current instance; a prober error is neither a result nor counted.
package prober
