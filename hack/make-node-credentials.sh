#!/usr/bin/env bash
# Issues the credentials a kubelet needs to join the test cluster as
# NODE_NAME, signed by the cluster CA of hack/start-control-plane.sh:
#   - a client certificate CN=system:node:NODE_NAME, O=system:nodes (what the
#     Node authorizer and NodeRestriction admission expect) and a kubeconfig
#     for https://127.0.0.1:6443 embedding it;
#   - a serving certificate for the kubelet's port, SANs NODE_NAME and
#     127.0.0.1 (the apiserver dials the node's InternalIP, 127.0.0.1 in our
#     tests, and checks it against the CA).
# Reuses what it issued before while still valid for the current CA; safe to
# run concurrently. Prints KEY=PATH lines (KUBECONFIG, CLIENT_CERT,
# CLIENT_KEY, SERVING_CERT, SERVING_KEY, CA_CERT) on stdout.
#
# Usage: hack/make-node-credentials.sh NODE_NAME
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

main() {
  (($# == 1)) || die "usage: $0 NODE_NAME"
  local node=$1 dir
  # A DNS subdomain (RFC 1123), as node names are.
  [[ ${#node} -le 253 && $node =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ ]] ||
    die "invalid node name '${node}': must be a lowercase RFC 1123 DNS subdomain"
  [[ $(id -u) == 0 ]] || die "run as root"
  ensure_tools >&2
  dir=${NODES_DIR}/${node}

  lock_pki
  if ! pki_fresh "${dir}/.checked" "${dir}"/{kubeconfig,kubelet-client.crt,kubelet-client.key,kubelet.crt,kubelet.key}; then
    ensure_ca
    issue_cert kubelet-client "$dir" "/O=system:nodes/CN=system:node:${node}" client
    issue_cert kubelet "$dir" "/CN=${node}" server "DNS:${node}" "IP:127.0.0.1"
    if ! kubeconfig_current "${dir}/kubeconfig" "${dir}/kubelet-client.crt"; then
      write_kubeconfig "${dir}/kubeconfig" "system:node:${node}" "${dir}/kubelet-client.crt" "${dir}/kubelet-client.key"
    fi
    pki_stamp "${dir}/.checked"
  fi
  unlock_pki

  cat <<EOF
KUBECONFIG=${dir}/kubeconfig
CLIENT_CERT=${dir}/kubelet-client.crt
CLIENT_KEY=${dir}/kubelet-client.key
SERVING_CERT=${dir}/kubelet.crt
SERVING_KEY=${dir}/kubelet.key
CA_CERT=${PKI_DIR}/ca.crt
EOF
}

main "$@"
