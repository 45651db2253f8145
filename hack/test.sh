#!/usr/bin/env bash
# The whole suite: prepares the node (hack/setup-node.sh, and containerd 2.x
# beside it: hack/setup-containerd2.sh), then go vet, the unit tests (and a
# short run of every fuzz target, hack/fuzz.sh 10s), the integration tests
# against the real containerd, the cluster (e2e) tests and the scaled-down
# reliability suite (hack/reliability.sh; --full and long fuzzing run on
# their own). Runs every step and exits non-zero if any failed. Needs root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

failed=()
step() {
  local name=$1 t0 rc=0
  shift
  echo "=== ${name}: $*"
  t0=$(now_ms)
  "$@" || rc=$?
  echo "=== ${name}: $([[ $rc == 0 ]] && echo ok || echo "FAILED (exit ${rc})") in $(($(now_ms) - t0))ms"
  ((rc == 0)) || failed+=("$name")
}

step setup bash hack/setup-node.sh
step setup-containerd2 bash hack/setup-containerd2.sh
if ((${#failed[@]})); then
  die "node setup failed; not running tests"
fi
step vet go vet ./...
step vet-integration go vet -tags integration ./...
step unit go test ./...
step fuzz bash hack/fuzz.sh 10s
step integration go test -tags integration -count=1 -p 1 -timeout 25m ./test/integration/... ./internal/node/stats/... ./internal/api/streaming/...
# The same suite on containerd 2.x, which has the CRI container event stream.
step integration-containerd2 env CONTAINER_RUNTIME_ENDPOINT=unix:///run/containerd2/containerd.sock \
  go test -tags integration -count=1 -p 1 -timeout 25m ./test/integration/... ./internal/node/stats/... ./internal/api/streaming/...
# Cluster mode against a real control plane built from k8s.io/kubernetes.
step vet-e2e go vet -tags e2e ./test/e2e/...
step vet-e2e-rotation go vet -tags "e2e rotation" ./test/e2e/kubeadm/
# csistandin: test/e2e's CSI tests; metrics-server: the kubectl top test (TestKubectlTopThroughMetricsServer).
step cluster-tools bash hack/build-cluster-tools.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubeadm csistandin metrics-server
# Metric families against the upstream kubelet, on the shared containerd
# like the integration steps (both kubelets run one after the other).
step upstream-kubelet bash hack/build-cluster-tools.sh kubelet-upstream
step metrics-families go test -tags "integration upstream" -count=1 -p 1 -timeout 10m -run TestMetricFamiliesMatchUpstream ./test/integration/
step control-plane bash hack/start-control-plane.sh
# test/e2e/kubeadm (kubeadm init and join, about 2 minutes) runs last.
step e2e go test -tags e2e -count=1 -p 1 -timeout 35m ./test/e2e/...
# The bars of issue 15 (a resize applied within 1 s of the patch; an
# ephemeral container next to a pod's start), about 15 s; numbers in
# test/bench/RESULTS.md.
step e2e-bars go test -tags e2e -count=1 -p 1 -timeout 5m -run '^$' -bench 'BenchmarkContainerStart|BenchmarkResizeApplied' -benchtime 5x ./test/e2e/
step vet-reliability go vet -tags reliability ./test/reliability/...
step reliability bash hack/reliability.sh

if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "all steps passed"
