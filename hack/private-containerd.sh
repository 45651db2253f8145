#!/usr/bin/env bash
# Starts (or stops) a containerd private to one user of this machine:
# own socket, root and state, sharing the CNI config, images and registry that
# hack/setup-node.sh set up. Every kubelet kills the pods it does not know, so
# two test runs (or a test run and a benchmark) must never share a runtime;
# each gets its own containerd from this script.
#
#   hack/private-containerd.sh NAME          start; prints the CRI endpoint
#   hack/private-containerd.sh NAME stop     stop it and remove its state
#   CONTAINERD=2 hack/private-containerd.sh NAME
#                                            the same with containerd 2.x
#                                            (run hack/setup-containerd2.sh first;
#                                            PRIVATE_CONTAINERD_VERSION=2 below)
#   hack/private-containerd.sh NAME purge    stop it and remove its root too
#                                            (images, snapshots): for a NAME
#                                            used once
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
#
# Both offer the runc-test handler (TEST_RUNTIME_HANDLER) beside runc.
# Environment (start only):
#   PRIVATE_CONTAINERD_VERSION=2   containerd 2.x (built by
#                                  hack/setup-containerd2.sh) instead of
#                                  Debian's 1.6
#   PRIVATE_CONTAINERD_SYSTEMD_BUS=ADDRESS
#                                  runc with the systemd cgroup driver
#                                  (SystemdCgroup = true), talking to the
#                                  systemd on that D-Bus address (a test's
#                                  stand-in: DBUS_SYSTEM_BUS_ADDRESS). runc
#                                  insists on /run/systemd/system, which a
#                                  machine without systemd lacks, so
#                                  containerd runs in its own mount namespace
#                                  (host mounts propagate into it) with a
#                                  tmpfs on /run/systemd holding that
#                                  directory; run a kubelet next to it with
#                                  nsenter --mount=/proc/PID/ns/mnt, PID from
#                                  /run/seed-kubelet/NAME-containerd.pid.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/containerd2.sh"

# CONTAINERD=2 and CONTAINERD_VERSION=2 are short forms of
# PRIVATE_CONTAINERD_VERSION=2.
PRIVATE_CONTAINERD_VERSION=${PRIVATE_CONTAINERD_VERSION:-${CONTAINERD_VERSION:-${CONTAINERD:-1}}}

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

# write_config writes the private config: 1.6's is the shared one with our
# paths (and the test handler when the shared one predates it), 2.x's is
# hack/lib/common.sh's.
write_config() {
  if [[ ${PRIVATE_CONTAINERD_VERSION:-1} == 2 ]]; then
    # runc 1.5 (idmapped mounts, for user namespaces) beside containerd 2.x.
    build_containerd2 >&2
    build_runc >&2
    containerd2_config "$P_ROOT" "${P_RUN}/state" "$P_SOCK" "$RUNC_BIN" >"$P_CONFIG"
  else
    sed -e "s|^root = .*|root = \"${P_ROOT}\"|" \
      -e "s|^state = .*|state = \"${P_RUN}/state\"|" \
      -e "s|^  address = \"${CONTAINERD_SOCK}\"|  address = \"${P_SOCK}\"|" \
      "$CONTAINERD_CONFIG" >"$P_CONFIG"
    grep -qF "runtimes.${TEST_RUNTIME_HANDLER}]" "$P_CONFIG" || test_handler_v2 >>"$P_CONFIG"
  fi
  grep -Eq "address = [\"']${P_SOCK}[\"']" "$P_CONFIG" || die "could not set the private socket in ${P_CONFIG}"
  if [[ -n ${PRIVATE_CONTAINERD_SYSTEMD_BUS:-} ]]; then
    sed -i -e 's|SystemdCgroup = false|SystemdCgroup = true|' "$P_CONFIG"
  fi
}

# containerd_cmd prints the command line that runs this containerd, one
# word per line.
containerd_cmd() {
  local bin=containerd
  if [[ ${PRIVATE_CONTAINERD_VERSION:-1} == 2 ]]; then
    # Its shim must come before Debian's 1.6 shim in PATH.
    printf '%s\n' env "PATH=${BIN_DIR}/containerd2:${PATH}"
    bin=${BIN_DIR}/containerd2/containerd
  fi
  if [[ -n ${PRIVATE_CONTAINERD_SYSTEMD_BUS:-} ]]; then
    # shellcheck disable=SC2016 # expanded by the inner shell
    printf '%s\n' env "DBUS_SYSTEM_BUS_ADDRESS=${PRIVATE_CONTAINERD_SYSTEMD_BUS}" \
      unshare --mount --propagation slave -- sh -c \
      'mount -t tmpfs -o mode=0755 seed-systemd /run/systemd && mkdir /run/systemd/system && exec "$@"' sh
  fi
  printf '%s\n' "$bin" --config "$P_CONFIG"
}

start() {
  [[ $(id -u) == 0 ]] || die "run as root"
  containerd_answers || die "the shared containerd is not running: run hack/setup-node.sh first"
  mkdir -p "$P_RUN"
  write_config
  if answers; then
    pid_alive "$P_PID" || die "something not started by us answers on ${P_SOCK}"
  else
    local cmd
    mapfile -t cmd < <(containerd_cmd)
    start_daemon "$P_PID" "$P_LOG" "${cmd[@]}"
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
purge)
  stop
  rm -rf "$(dirname "$P_ROOT")"
  ;;
*) die "unknown action ${2}" ;;
esac
