#!/usr/bin/env bash
# Pod start with and without a CSI volume, our kubelet vs the upstream
# kubelet on the same stand-in driver (test/bench/csi): each kubelet joins the
# test control plane in turn, on a containerd private to the benchmark, with
# the same configuration; BENCH_CSI_RUNS pods of each kind (default 10) after
# a warm-up. Prints (and writes to BENCH_CSI_OUT, default
# _output/bench/csi.md) the Markdown table for test/bench/RESULTS.md.
# Needs root, the cluster tools (hack/build-cluster-tools.sh, with
# kubelet-upstream and csistandin) and the control plane; holds the e2e lock
# while it runs (a few minutes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"
[[ $(id -u) == 0 ]] || die "run as root"
bash hack/build-cluster-tools.sh kubelet-upstream csistandin
export BENCH_CSI_OUT=${BENCH_CSI_OUT:-${OUT_DIR}/bench/csi.md}
mkdir -p "$(dirname "$BENCH_CSI_OUT")"
endpoint=$(bash hack/private-containerd.sh csibench)
trap 'bash hack/private-containerd.sh csibench stop >/dev/null 2>&1 || true' EXIT
CONTAINER_RUNTIME_ENDPOINT=$endpoint flock /tmp/seed-e2e.lock \
  go test -tags e2e -count=1 -timeout 30m -run TestCSIPodStartLatency -v ./test/bench/csi/ |
  grep -v '^\s*[IWE][0-9]\{4\} '
cat "$BENCH_CSI_OUT"
