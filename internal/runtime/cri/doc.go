// Package cri owns the kubelet's connection to the container runtime: one
// gRPC connection carrying the CRI v1 RuntimeService and ImageService, the
// wait for the runtime at start-up and its health for /healthz.
//
// Invariants: every call made through Client carries a deadline; the
// connection is dialled lazily and retried by gRPC, so a runtime that is
// down at start-up is reached once it comes up.
package cri
