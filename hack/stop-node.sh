#!/usr/bin/env bash
# Stops what hack/setup-node.sh and hack/run-standalone.sh started: the
# kubelet, the loopback registry, containerd and hack/setup-containerd2.sh's
# containerd 2.x. Configs, images and
# containerd's state stay; running pod containers keep their shims and are
# picked up again by the next containerd start.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

stop_daemon "${RUN_DIR}/kubelet.pid" kubelet
stop_daemon "${RUN_DIR}/registry.pid" registry
rm -f "${RUN_DIR}/registry-busybox.digest"
stop_daemon "${RUN_DIR}/containerd2.pid" containerd2
stop_daemon "${RUN_DIR}/containerd.pid" containerd
if containerd_answers; then
  log "warning: something else still answers on ${CONTAINERD_SOCK} (not started by setup-node.sh)"
fi
