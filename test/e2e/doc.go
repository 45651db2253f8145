// Package e2e holds cluster-mode tests: kubelets joined to a real control
// plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// v1.36.3 on loopback), which the framework starts on demand with
// hack/start-control-plane.sh. They need root and the binaries of
// `bash hack/build-cluster-tools.sh`; run them with
//
//	go test -tags e2e -count=1 -p 1 ./test/e2e/...
//
// A missing binary fails the tests (it does not skip them).
package e2e
