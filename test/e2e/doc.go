// Package e2e holds cluster-mode tests: kubelets joined to a real control
// plane (hack/start-control-plane.sh, started on demand by the framework).
// They need root and the binaries of `bash hack/build-cluster-tools.sh`; run
// them with `go test -tags e2e ./test/e2e/...`.
package e2e
