#!/usr/bin/env bash
# End-to-end benchmark: our kubelet against the upstream kubelet (v1.36,
# _output/bin/kubelet-upstream from hack/build-cluster-tools.sh), with raw
# CRI calls as the baseline. Measures single static pod start latency (to
# CRI RUNNING and to Running in /pods), memory with 30 pods, and stripped
# binary sizes; prints a Markdown table. Method: test/bench/main.go; results
# and notes: test/bench/RESULTS.md. Takes about 3.5 minutes. Needs root.
#
# The kubelets run on a containerd 1.6 private to the benchmark (own socket,
# root /var/lib/seed-bench and state; same binary, config and CNI network as
# hack/setup-node.sh, log /var/log/seed-bench-containerd.log),
# because each kubelet stops every pod on its runtime that it does not know:
# on the shared containerd it would kill the pods of tests running beside it.
#
# With --cluster it runs the cluster-mode benchmark instead (the rawcluster
# and cluster phases, test/bench/cluster.go): raw CRI does batches of pods
# straight on the runtime as the floor, then each kubelet in turn joins a
# control plane of the benchmark's own (SEED_CP=BENCH_CP on free ports, with
# an audit log of the nodes' requests; stopped and deleted afterwards) as the
# same node, on a containerd of its own (hack/private-containerd.sh
# BENCH_CONTAINERD_NAME; PRIVATE_CONTAINERD_VERSION=2 for containerd 2.x);
# batches of pause pods are created through the API server, observed Ready
# by a watch, left idle, and deleted with their namespace. Results in
# _output/bench/cluster.md and cluster.json; about 10 minutes per kubelet
# for batches of 1, 30, 100 and 250 on this machine.
#
# Environment:
#   UPSTREAM_KUBELET   upstream binary (default _output/bin/kubelet-upstream;
#                      skipped with a note when missing)
#   BENCH_RUNS         measured pod starts per kubelet and raw CRI (10)
#   BENCH_MEM_PODS     pods in the memory phase (30)
#   BENCH_MEM_SETTLE   wait before reading memory (30s)
#   BENCH_PHASES       raw,start,mem (add scrape: one /metrics/cadvisor scrape
#                      with BENCH_SCRAPE_PODS pods, default 100, CPU and
#                      allocations)
#   BENCH_SCRAPES      scrapes per round of the scrape phase (20)
#   BENCH_SCRAPE_ROUNDS rounds (an idle window, then a scraping window) (2)
#   BENCH_SCRAPE_PLAIN=1 scrape without Accept-Encoding: gzip (Prometheus
#                      and the default client ask for it)
#   BENCH_SCRAPE_PROFILE=1 save each kubelet's CPU profile over the last
#                      scraping window (OUT/profiles/cpu-FLAVOR.pprof)
#   BENCH_KUBELETS     ours,upstream
#   BENCH_ENDPOINT     use this CRI endpoint instead of a private containerd
#                      (only when nothing else runs pods on it)
#   BENCH_REV          build our kubelet from this commit (git archive) instead
#                      of the working tree, e.g. HEAD while others edit
#   BENCH_BATCHES      --cluster: batch sizes (1,30,100,250)
#   BENCH_IDLE         --cluster: idle window with each batch running (30s)
#   BENCH_BATCH_TIMEOUT --cluster: how long a batch may take to be Ready,
#                      and its namespace to go (10m)
#   BENCH_CP           --cluster: name of the control plane (bench-cl)
#   BENCH_CONTAINERD_NAME
#                      --cluster: name of the private containerd (bench-cl)
#   BENCH_OUT          output directory (_output/bench); results.md and
#                      results.json land there, kubelet logs under work/
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

[[ $(id -u) == 0 ]] || die "run as root"
MODE=standalone
case ${1:-} in
"") ;;
--cluster) MODE=cluster ;;
*) die "usage: $0 [--cluster]" ;;
esac

OUT=${BENCH_OUT:-${OUT_DIR}/bench}
UPSTREAM=${UPSTREAM_KUBELET:-${BIN_DIR}/kubelet-upstream}
BENCH_RUN_DIR=/run/seed-bench
BENCH_SOCK=${BENCH_RUN_DIR}/containerd.sock
BENCH_CONFIG=${BENCH_RUN_DIR}/containerd.toml
BENCH_CONTAINERD_LOG=/var/log/seed-bench-containerd.log
BENCH_PID=${RUN_DIR}/bench-containerd.pid
# Kernel settings the upstream kubelet sets on start (protectKernelDefaults
# false); restored afterwards so the benchmark leaves the machine as it was.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)

mkdir -p "$OUT"
# The upstream kubelet bind-mounts its root directory onto itself; a run
# that was killed may have left such mounts behind.
awk -v d="${OUT}/work" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
  while read -r m; do umount -l "$m"; done
rm -rf "${OUT}/work"
mkdir -p "${OUT}/work"

log "preparing the node (hack/setup-node.sh, log ${OUT}/setup-node.log)"
bash hack/setup-node.sh >"${OUT}/setup-node.log" 2>&1 || {
  tail -n 20 "${OUT}/setup-node.log" >&2
  die "hack/setup-node.sh failed"
}

# Ours is built like hack/build-cluster-tools.sh builds upstream's kubelet:
# static (no cgo), -trimpath; once as built and once stripped.
src=$REPO_ROOT
if [[ -n ${BENCH_REV:-} ]]; then
  src=${OUT}/src
  rm -rf "$src" && mkdir -p "$src"
  git -C "$REPO_ROOT" archive "$BENCH_REV" | tar -x -C "$src"
  ours_source="commit $(git -C "$REPO_ROOT" rev-parse --short "$BENCH_REV")"
else
  ours_source="the working tree (HEAD $(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$REPO_ROOT" diff --quiet HEAD -- 2>/dev/null || echo ' + local changes'))"
fi
log "building our kubelet from ${ours_source}"
(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "${OUT}/kubelet-ours" ./cmd/kubelet)
(cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${OUT}/kubelet-ours-stripped" ./cmd/kubelet)
go build -o "${OUT}/bench" ./test/bench

KUBELETS=${BENCH_KUBELETS:-ours,upstream}
ours_args=()
[[ ,$KUBELETS, == *,ours,* ]] && ours_args=(-ours "${OUT}/kubelet-ours-stripped" -ours-unstripped "${OUT}/kubelet-ours" -ours-source "$ours_source")
upstream_args=()
if [[ ,$KUBELETS, != *,upstream,* ]]; then
  :
elif [[ -x $UPSTREAM ]]; then
  cp "$UPSTREAM" "${OUT}/kubelet-upstream-stripped"
  strip "${OUT}/kubelet-upstream-stripped"
  upstream_args=(-upstream "${OUT}/kubelet-upstream-stripped" -upstream-unstripped "$UPSTREAM")
  log "upstream: $("$UPSTREAM" --version)"
else
  log "warning: no upstream kubelet at ${UPSTREAM} (build it with hack/build-cluster-tools.sh kubelet-upstream); measuring ours only"
fi

bench_containerd_answers() {
  [[ -S $BENCH_SOCK ]] && ctr --address "$BENCH_SOCK" --connect-timeout 1s --timeout 3s version >/dev/null 2>&1
}

start_bench_containerd() {
  mkdir -p "$BENCH_RUN_DIR"
  sed -e 's|^root = .*|root = "/var/lib/seed-bench/containerd"|' \
    -e "s|^state = .*|state = \"${BENCH_RUN_DIR}/state\"|" \
    -e "s|^  address = \"/run/containerd/containerd.sock\"|  address = \"${BENCH_SOCK}\"|" \
    "$CONTAINERD_CONFIG" >"$BENCH_CONFIG"
  grep -q "address = \"${BENCH_SOCK}\"" "$BENCH_CONFIG" || die "could not set the private containerd's socket in ${BENCH_CONFIG}"
  if bench_containerd_answers; then
    pid_alive "$BENCH_PID" || die "something not started by us answers on ${BENCH_SOCK}"
    log "private containerd: already running (pid $(<"$BENCH_PID"))"
  else
    start_daemon "$BENCH_PID" "$BENCH_CONTAINERD_LOG" containerd --config "$BENCH_CONFIG"
    wait_until 30 "private containerd on ${BENCH_SOCK}" bench_containerd_answers ||
      die "private containerd did not start; log ${BENCH_CONTAINERD_LOG}"
    log "private containerd: started (pid $(<"$BENCH_PID")) on ${BENCH_SOCK}, log ${BENCH_CONTAINERD_LOG}"
  fi
  local tar
  for tar in "${OUT_DIR}/images/pause.tar" "${OUT_DIR}/images/busybox.tar"; do
    ctr --address "$BENCH_SOCK" -n k8s.io images import "$tar" >/dev/null
  done
}

declare -A saved_sysctls=()
save_sysctls() {
  local k
  for k in "${SYSCTLS[@]}"; do
    [[ -r /proc/sys/$k ]] && saved_sysctls[$k]=$(<"/proc/sys/$k")
  done
}
restore_sysctls() {
  local k
  for k in "${!saved_sysctls[@]}"; do
    if [[ $(<"/proc/sys/$k") != "${saved_sysctls[$k]}" ]]; then
      echo "${saved_sysctls[$k]}" >"/proc/sys/$k" 2>/dev/null &&
        log "restored ${k//\//.} to ${saved_sysctls[$k]}" || log "warning: could not restore ${k//\//.}"
    fi
  done
}

endpoint=${BENCH_ENDPOINT:-}
private_args=()
cp_env=()
cleanup() {
  local rc=$?
  restore_sysctls
  if [[ $MODE == cluster ]]; then
    if [[ -n ${endpoint:-} ]]; then
      "${OUT}/bench" -cleanup-only -private-runtime -endpoint "$endpoint" 2>&1 || true
      bash hack/private-containerd.sh "$CL_CONTAINERD" stop >/dev/null 2>&1 || true
    fi
    if ((${#cp_env[@]})); then
      env "${cp_env[@]}" bash hack/stop-control-plane.sh --clean >/dev/null 2>&1 || true
    fi
  elif [[ -z ${BENCH_ENDPOINT:-} ]] && bench_containerd_answers; then
    "${OUT}/bench" -cleanup-only -private-runtime -endpoint "unix://${BENCH_SOCK}" 2>&1 || true
    stop_daemon "$BENCH_PID" "private containerd" >/dev/null
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

save_sysctls

if [[ $MODE == cluster ]]; then
  source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
  CL_CONTAINERD=${BENCH_CONTAINERD_NAME:-bench-cl}
  cp_name=${BENCH_CP:-bench-cl}
  apiserver_port=$(free_port)
  cp_env=(SEED_CP="$cp_name" APISERVER_PORT="$apiserver_port" ETCD_CLIENT_PORT="$(free_port)" ETCD_PEER_PORT="$(free_port)"
    CONTROLLER_MANAGER_PORT="$(free_port)" SCHEDULER_PORT="$(free_port)")
  # One audit event per request of a node (apiserver_request_total has no
  # user label), so each kubelet's API traffic is counted by the API server.
  audit_log=${OUT}/audit.log
  rm -f "$audit_log"
  printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: [RequestReceived]' 'rules:' \
    '- level: Metadata' '  userGroups: ["system:nodes"]' '- level: None' >"${OUT}/audit-policy.yaml"
  log "control plane ${cp_name} on https://127.0.0.1:${apiserver_port} (audit log ${audit_log}, log ${OUT}/control-plane.log)"
  env "${cp_env[@]}" APISERVER_EXTRA_ARGS="--audit-policy-file=${OUT}/audit-policy.yaml --audit-log-path=${audit_log} --audit-log-format=json --audit-log-mode=blocking" \
    bash hack/start-control-plane.sh >"${OUT}/control-plane.log" 2>&1 || {
    tail -n 20 "${OUT}/control-plane.log" >&2
    die "the benchmark's control plane did not start"
  }
  node=bench-node
  node_kubeconfig=$(env "${cp_env[@]}" bash hack/make-node-credentials.sh "$node" | sed -n 's/^KUBECONFIG=//p')
  [[ -n $node_kubeconfig ]] || die "no node credentials for ${node}"
  # The CNI bridge's address: upstream refuses a loopback node IP.
  node_ip=$(ip -4 -o addr show dev cni0 | awk '{ split($4, a, "/"); print a[1]; exit }')
  [[ -n $node_ip ]] || die "no IPv4 address on cni0 (run hack/setup-node.sh)"
  endpoint=$(bash hack/private-containerd.sh "$CL_CONTAINERD")
  log "private containerd ${CL_CONTAINERD} (version ${PRIVATE_CONTAINERD_VERSION:-1}) at ${endpoint}"
  log "running the cluster-mode benchmark (kubelet logs under ${OUT}/work)"
  "${OUT}/bench" \
    "${ours_args[@]}" "${upstream_args[@]}" \
    -endpoint "$endpoint" -private-runtime \
    -phases "${BENCH_PHASES:-rawcluster,cluster}" \
    -apiserver "https://127.0.0.1:${apiserver_port}" -pki-dir "$PKI_DIR" \
    -node-kubeconfig "$node_kubeconfig" -node-name "$node" -node-ip "$node_ip" -audit-log "$audit_log" \
    -batches "${BENCH_BATCHES:-1,30,100,250}" -cluster-idle "${BENCH_IDLE:-30s}" -batch-timeout "${BENCH_BATCH_TIMEOUT:-10m}" \
    -work "${OUT}/work" -md "${OUT}/cluster.md" -json "${OUT}/cluster.json"
  log "results: ${OUT}/cluster.md, ${OUT}/cluster.json"
  exit 0
fi

if [[ -z $endpoint ]]; then
  start_bench_containerd
  endpoint=unix://${BENCH_SOCK}
  private_args=(-private-runtime -runtime-log "$BENCH_CONTAINERD_LOG")
fi

log "running (about 3.5 minutes; kubelet logs under ${OUT}/work)"
"${OUT}/bench" \
  "${ours_args[@]}" "${upstream_args[@]}" \
  -endpoint "$endpoint" "${private_args[@]}" \
  -runs "${BENCH_RUNS:-10}" -mem-pods "${BENCH_MEM_PODS:-30}" -mem-settle "${BENCH_MEM_SETTLE:-30s}" \
  -scrape-pods "${BENCH_SCRAPE_PODS:-100}" -scrapes "${BENCH_SCRAPES:-20}" -scrape-rounds "${BENCH_SCRAPE_ROUNDS:-2}" \
  -scrape-profile="$([[ ${BENCH_SCRAPE_PROFILE:-0} == 1 ]] && echo "${OUT}/profiles")" \
  -scrape-plain="$([[ ${BENCH_SCRAPE_PLAIN:-0} == 1 ]] && echo true || echo false)" \
  -phases "${BENCH_PHASES:-raw,start,mem}" \
  -work "${OUT}/work" -md "${OUT}/results.md" -json "${OUT}/results.json"
log "results: ${OUT}/results.md, ${OUT}/results.json"
