#!/usr/bin/env bash
# Stops what hack/start-control-plane.sh started (scheduler, controller-
# manager, apiserver, etcd; by pidfile, nothing else).
#   --clean   also delete etcd's data: the next start makes a fresh cluster
#   --purge   --clean, and delete the PKI, kubeconfigs and node credentials
# With SEED_CP=NAME (and its ports, see hack/lib/cluster.sh) it stops that
# separate control plane; --clean and --purge then delete only what is its
# own (/var/lib/seed-kubelet/cp-NAME), never the shared PKI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

main() {
  [[ $(id -u) == 0 ]] || die "run as root"
  local clean=no purge=no name
  for arg in "$@"; do
    case $arg in
    --clean) clean=yes ;;
    --purge) clean=yes purge=yes ;;
    *) die "usage: $0 [--clean|--purge]" ;;
    esac
  done
  for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop_daemon "$(pidfile "$name")" "${CP_PREFIX}${name}"
  done
  if [[ $clean == yes ]]; then
    rm -rf "$ETCD_DATA_DIR"
    log "etcd: deleted ${ETCD_DATA_DIR}"
  fi
  if [[ -n $SEED_CP && $clean == yes ]]; then
    rm -rf "$CP_DIR" "$PKI_STAMP"
    log "control plane ${SEED_CP}: deleted ${CP_DIR}"
    return
  fi
  if [[ $purge == yes ]]; then
    rm -rf "$PKI_DIR" "$KUBECONFIG_DIR" "$NODES_DIR" "$ADMIN_KUBECONFIG" "$PKI_LOCK"
    log "pki: deleted ${PKI_DIR}, ${KUBECONFIG_DIR}, ${NODES_DIR} and ${ADMIN_KUBECONFIG}"
  fi
}

main "$@"
