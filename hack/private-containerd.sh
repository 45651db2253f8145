#!/usr/bin/env bash
# Starts (or stops) a containerd 1.6 private to one user of this machine:
# own socket, root and state, sharing the CNI config, images and registry that
# hack/setup-node.sh set up. Every kubelet kills the pods it does not know, so
# two test runs (or a test run and a benchmark) must never share a runtime;
# each gets its own containerd from this script.
#
#   hack/private-containerd.sh NAME          start; prints the CRI endpoint
#   hack/private-containerd.sh NAME stop     stop it and remove its state
#
# With CONTAINERD_VERSION=2 it starts containerd 2.x instead (built from
# test/tools/containerd2 as hack/setup-containerd2.sh does), running
# containers with runc built from test/tools/runc: it has the CRI event
# stream and offers user namespaces (hostUsers: false), which Debian's 1.6
# and runc 1.1.5 do not. One NAME is one version; stop it before reusing
# the NAME with the other.
#
# Socket /run/seed-NAME/containerd.sock, root /var/lib/seed-NAME/containerd,
# log /var/log/seed-NAME-containerd.log. Run hack/setup-node.sh first. Needs
# root. Use it with: CONTAINER_RUNTIME_ENDPOINT=$(hack/private-containerd.sh NAME) go test ...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/containerd2.sh"

NAME=${1:?usage: $0 NAME [stop]}
[[ $NAME =~ ^[a-z0-9-]+$ ]] || die "NAME must be lower-case letters, digits and dashes"
P_RUN=/run/seed-${NAME}
P_SOCK=${P_RUN}/containerd.sock
P_CONFIG=${P_RUN}/containerd.toml
P_LOG=/var/log/seed-${NAME}-containerd.log
P_PID=${RUN_DIR}/${NAME}-containerd.pid
P_ROOT=/var/lib/seed-${NAME}/containerd

answers() {
  [[ -S $P_SOCK ]] && ctr --address "$P_SOCK" --connect-timeout 1s --timeout 3s version >/dev/null 2>&1
}

start() {
  [[ $(id -u) == 0 ]] || die "run as root"
  containerd_answers || die "the shared containerd is not running: run hack/setup-node.sh first"
  mkdir -p "$P_RUN"
  local bin=containerd path=$PATH
  if [[ ${CONTAINERD_VERSION:-1} == 2 ]]; then
    build_containerd2 >&2
    build_runc >&2
    containerd2_config "$P_ROOT" "${P_RUN}/state" "$P_SOCK" "$RUNC_BIN" >"$P_CONFIG"
    bin=${C2_BIN}/containerd
    # The 2.x shim must come before Debian's 1.6 shim in PATH.
    path="${C2_BIN}:${PATH}"
  else
    sed -e "s|^root = .*|root = \"${P_ROOT}\"|" \
      -e "s|^state = .*|state = \"${P_RUN}/state\"|" \
      -e "s|^  address = \"${CONTAINERD_SOCK}\"|  address = \"${P_SOCK}\"|" \
      "$CONTAINERD_CONFIG" >"$P_CONFIG"
  fi
  grep -q "address = .${P_SOCK}." "$P_CONFIG" || die "could not set the private socket in ${P_CONFIG}"
  if answers; then
    pid_alive "$P_PID" || die "something not started by us answers on ${P_SOCK}"
  else
    start_daemon "$P_PID" "$P_LOG" env PATH="$path" "$bin" --config "$P_CONFIG"
    wait_until 30 "containerd on ${P_SOCK}" answers >&2 || die "containerd did not start; log ${P_LOG}"
    log "started (pid $(<"$P_PID")) on ${P_SOCK}, log ${P_LOG}" >&2
  fi
  local tar
  for tar in "${OUT_DIR}/images/pause.tar" "${OUT_DIR}/images/busybox.tar"; do
    ctr --address "$P_SOCK" -n k8s.io images import "$tar" >/dev/null
  done
  echo "unix://${P_SOCK}"
}

stop() {
  stop_daemon "$P_PID" "containerd ${NAME}" >&2
  # Shims outlive containerd; their containers would keep running.
  pkill -f "containerd-shim.*-address ${P_SOCK}" 2>/dev/null || true
  # Sandbox shm and rootfs mounts live below the state dir (which is not a
  # mount point itself): unmount them deepest first.
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(awk -v p="${P_RUN}/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts | sort -r)
  rm -rf "$P_RUN"
}

case ${2:-start} in
start) start ;;
stop) stop ;;
*) die "unknown action ${2}" ;;
esac
