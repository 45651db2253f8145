// Package framework holds helpers for the cluster-mode (e2e) tests: it starts
// the control plane of hack/start-control-plane.sh (etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler v1.36.3 on loopback, built by
// hack/build-cluster-tools.sh), hands out admin and node clients, issues
// per-node credentials with hack/make-node-credentials.sh and runs kubectl.
//
// Everything here fails the test (never skips it) when a piece is missing.
package framework
