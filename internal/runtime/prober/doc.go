// Package prober runs container liveness, readiness and startup probes
// (exec, httpGet, tcpSocket, grpc) on a per-container schedule, applies
// success/failure thresholds, and reports result changes to the kubelet so it
// can update pod status or restart unhealthy containers.
package prober
