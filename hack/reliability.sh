#!/usr/bin/env bash
# The reliability suite (test/reliability, build tag reliability): faults and
# churn against the real containerd and control plane, each figure printed
# and checked against its bound:
#   KubeletRestart     kubelet kill -9 with pods (with and without readiness
#                      probes, static pods): no pod ever not Ready in the API
#                      (a watch), no container restarted or changed
#   ContainerdRestart  containerd kill -9 and restart: no container changed,
#                      every pod and the node Ready within 10 s of its return
#   APIServerOutage    the apiserver of a separate control plane down 60 s:
#                      no restart, statuses right within 10 s of its return
#   NamespaceDeletion  a namespace of pods with projected service account
#                      tokens gone within 30 s
#   PodChurn           create/delete cycles: nothing leaked (sandboxes,
#                      containers, netns, pod cgroups, mounts, pod dirs), RSS
#                      back within 10 %
#   AbortedStreams     exec/attach/port-forward streams killed mid-way: the
#                      kubelet's goroutines back to their baseline
#
# By default the counts are scaled down (about 6 minutes, for hack/test.sh);
# --full runs the full figures (50 pods, 1000 churn cycles, 200 streams, ...;
# about 45 minutes per kubelet). --kubelet upstream (or both) runs the same
# tests against the upstream kubelet (_output/bin/kubelet-upstream, from
# hack/build-cluster-tools.sh kubelet-upstream) for comparison; its misses of
# our bounds are reported, not failures. docs/reliability.md keeps the latest
# full run of both.
#
# Everything runs on a containerd private to this run (hack/private-
# containerd.sh; the tests kill it) and a control plane of the suite's own
# (SEED_CP, on free ports; the apiserver outage takes down yet another one),
# so the suite never touches the shared control plane or containerd and can
# run beside other tests. Needs root.
#
# Usage: hack/reliability.sh [--full] [--kubelet ours|upstream|both] [--run REGEX]
# Output: _output/reliability/ (figures.jsonl, results.md, the go test log
# and each kubelet's log under logs/), or $RELIABILITY_OUT.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

full=0 kubelets=ours run=""
while (($#)); do
  case $1 in
  --full) full=1 ;;
  --kubelet) kubelets=${2:?--kubelet needs ours, upstream or both}; shift ;;
  --run) run=${2:?--run needs a regular expression}; shift ;;
  *) die "usage: $0 [--full] [--kubelet ours|upstream|both] [--run REGEX]" ;;
  esac
  shift
done
case $kubelets in
ours | upstream) ;;
both) kubelets="ours upstream" ;;
*) die "--kubelet: ours, upstream or both" ;;
esac
[[ $(id -u) == 0 ]] || die "run as root"

OUT=${RELIABILITY_OUT:-${OUT_DIR}/reliability}
rm -rf "$OUT"
mkdir -p "$OUT"
# One go test run per kubelet; the full run takes a while.
TIMEOUT=20m
((full)) && TIMEOUT=120m

log "preparing the node and the cluster tools (logs in ${OUT})"
bash hack/setup-node.sh >"${OUT}/setup-node.log" 2>&1 || {
  tail -n 20 "${OUT}/setup-node.log" >&2
  die "hack/setup-node.sh failed"
}
tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
[[ " $kubelets " == *" upstream "* ]] && tools+=(kubelet-upstream)
bash hack/build-cluster-tools.sh "${tools[@]}" >"${OUT}/build-cluster-tools.log" 2>&1 || {
  tail -n 20 "${OUT}/build-cluster-tools.log" >&2
  die "hack/build-cluster-tools.sh failed"
}

# A containerd of this run's own: every kubelet stops the pods it does not
# know, and the containerd test kills it.
NAME=rel-$$
ENDPOINT=$(bash hack/private-containerd.sh "$NAME" 2>"${OUT}/containerd.log")
# Named after this run, so its root goes with it.
cleanup() { bash hack/private-containerd.sh "$NAME" purge >>"${OUT}/containerd.log" 2>&1 || true; }
trap cleanup EXIT

# Kernel settings the upstream kubelet sets on start (protectKernelDefaults
# false), restored after its run so the machine is left as it was.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)

failed=()
for k in $kubelets; do
  declare -A saved=()
  if [[ $k == upstream ]]; then
    for s in "${SYSCTLS[@]}"; do saved[$s]=$(<"/proc/sys/${s}"); done
  fi
  log "${k} kubelet: go test -tags reliability (full=${full}), log ${OUT}/go-test-${k}.log"
  rc=0
  env CONTAINER_RUNTIME_ENDPOINT="$ENDPOINT" RELIABILITY_CONTAINERD="$NAME" RELIABILITY_OUT="$OUT" \
    RELIABILITY_FULL="$full" RELIABILITY_KUBELET="$k" \
    go test -tags reliability -count=1 -p 1 -v -timeout "$TIMEOUT" ${run:+-run "$run"} ./test/reliability/ \
    >"${OUT}/go-test-${k}.log" 2>&1 || rc=$?
  grep -E '^\s+[a-z_]+_test\.go:[0-9]+: FIGURE |^--- (PASS|FAIL)' "${OUT}/go-test-${k}.log" | sed 's/^ *//' || true
  if ((rc)); then
    failed+=("$k")
    grep -E '^\s+[a-z_]+_test\.go:[0-9]+: ' "${OUT}/go-test-${k}.log" | grep -v FIGURE | tail -n 20 >&2 || true
  fi
  for s in "${!saved[@]}"; do echo "${saved[$s]}" >"/proc/sys/${s}" 2>/dev/null || true; done
  unset saved
done

if [[ -s ${OUT}/figures.jsonl ]]; then
  go run ./test/reliability/report -o "${OUT}/results.md" "${OUT}/figures.jsonl"
fi
# The upstream kubelet is measured, not judged: only ours fails the suite.
if [[ " ${failed[*]} " == *" ours "* ]]; then
  die "reliability suite failed (${OUT}/go-test-ours.log)"
fi
log "results: ${OUT}/results.md"
