#!/usr/bin/env bash
# Starts a second runtime beside Debian's containerd 1.6: containerd 2.x,
# built from test/tools/containerd2, on its own socket, root and state dirs.
# It has the CRI container event stream that 1.6 lacks, so the kubelet's
# event-driven PLEG path is tested against a real runtime. Run after
# hack/setup-node.sh (it reuses its CNI config, images and registry).
# Idempotent; needs root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/containerd2.sh"

C2_SOCK=/run/containerd2/containerd.sock
C2_CONFIG=/etc/seed-kubelet/containerd2.toml
C2_LOG=/var/log/containerd2.log
C2_PID=${RUN_DIR}/containerd2.pid

c2_answers() {
  [[ -S $C2_SOCK ]] && ctr --address "$C2_SOCK" --connect-timeout 1s --timeout 3s version >/dev/null 2>&1
}

write_config() {
  mkdir -p "$(dirname "$C2_CONFIG")"
  containerd2_config /var/lib/containerd2 /run/containerd2 "$C2_SOCK" >"${C2_CONFIG}.new"
  if cmp -s "${C2_CONFIG}.new" "$C2_CONFIG"; then
    rm "${C2_CONFIG}.new"
    return 1
  fi
  mv "${C2_CONFIG}.new" "$C2_CONFIG"
  return 0
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root"
  [[ -f ${OUT_DIR}/images/busybox.tar && -f ${OUT_DIR}/images/pause.tar ]] || die "run hack/setup-node.sh first (images)"
  local t0 changed=no
  t0=$(now_ms)
  build_containerd2
  write_config && changed=yes
  if [[ $changed == yes ]] && pid_alive "$C2_PID"; then
    stop_daemon "$C2_PID" containerd2
  fi
  if ! c2_answers; then
    mkdir -p /run/containerd2
    # The 2.x shim must come before Debian's 1.6 shim in PATH.
    start_daemon "$C2_PID" "$C2_LOG" env PATH="${C2_BIN}:${PATH}" "${C2_BIN}/containerd" --config "$C2_CONFIG"
    wait_until 30 "containerd2 on ${C2_SOCK}" c2_answers || die "containerd2 did not start; log: ${C2_LOG}"
    log "containerd2: started (pid $(<"$C2_PID")), log ${C2_LOG}"
  else
    log "containerd2: already running"
  fi
  local tar
  for tar in pause busybox; do
    ctr --address "$C2_SOCK" -n k8s.io images import "${OUT_DIR}/images/${tar}.tar" >/dev/null
  done
  log "containerd2 ready in $(($(now_ms) - t0))ms (CRI endpoint unix://${C2_SOCK})"
}

main "$@"
