#!/usr/bin/env bash
# Runs our kubelet in standalone mode on this machine: prepares the node
# (hack/setup-node.sh), builds ./cmd/kubelet and starts it in the background
# with examples/kubelet-config.yaml and the local API (--local-api-address
# LOCAL_API_ADDRESS, default 127.0.0.1:10260), then prints the kubectl
# command line that drives it. Extra arguments go to the kubelet.
# KUBELET_CONFIG and KUBELET_ROOT_DIR (default /var/lib/kubelet) override the
# configuration file and --root-dir.
# A running instance started by this script is replaced. Stop: hack/stop-node.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

CONFIG=${KUBELET_CONFIG:-${REPO_ROOT}/examples/kubelet-config.yaml}
ROOT_DIR=${KUBELET_ROOT_DIR:-/var/lib/kubelet}
LOCAL_API_ADDRESS=${LOCAL_API_ADDRESS:-127.0.0.1:10260}
LOCAL_KUBECONFIG=${ROOT_DIR}/local-api/kubeconfig
KUBELET_LOG=/var/log/seed-kubelet.log
PIDFILE=${RUN_DIR}/kubelet.pid

# healthz_ok: the kubelet's healthz endpoint on 127.0.0.1:10248 answers 200.
healthz_ok() {
  local status
  exec 3<>/dev/tcp/127.0.0.1/10248 || return 1
  printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  read -r -t 2 _ status _ <&3 || true
  exec 3>&-
  [[ $status == 200 ]]
}

bash "${REPO_ROOT}/hack/setup-node.sh"
[[ -f $CONFIG ]] || die "kubelet config ${CONFIG} not found"
(cd "$REPO_ROOT" && go build -o "${BIN_DIR}/kubelet" ./cmd/kubelet)

if pid_alive "$PIDFILE"; then
  stop_daemon "$PIDFILE" kubelet
fi
start_daemon "$PIDFILE" "$KUBELET_LOG" "${BIN_DIR}/kubelet" --config "$CONFIG" \
  --root-dir "$ROOT_DIR" --local-api-address "$LOCAL_API_ADDRESS" "$@"
if ! wait_until 60 "kubelet healthz on 127.0.0.1:10248" healthz_ok; then
  tail -n 20 "$KUBELET_LOG" >&2
  pid_alive "$PIDFILE" || die "kubelet exited; log: ${KUBELET_LOG}"
  die "kubelet (pid $(<"$PIDFILE")) is not healthy; log: ${KUBELET_LOG}"
fi
log "kubelet running (pid $(<"$PIDFILE")), config ${CONFIG}, log ${KUBELET_LOG}"

# web_running: the example web pod is listed Running with a pod IP.
web_running() {
  local body
  body=$(curl -fsS http://127.0.0.1:10255/pods 2>/dev/null) || return 1
  python3 - "$body" <<'PY'
import json, sys
pods = json.loads(sys.argv[1])["items"]
ok = [p for p in pods if p["metadata"]["name"].startswith("web-") and p["status"].get("phase") == "Running" and p["status"].get("podIP")]
sys.exit(0 if ok else 1)
PY
}
if ! wait_until 120 "example web pod Running" web_running; then
  tail -n 20 "$KUBELET_LOG" >&2
  die "the example web pod did not reach Running; log: ${KUBELET_LOG}"
fi
log "example web pod is Running"

# The local API writes its kubeconfig before it listens.
local_api_up() {
  local host=${LOCAL_API_ADDRESS%:*} port=${LOCAL_API_ADDRESS##*:}
  [[ -f $LOCAL_KUBECONFIG ]] && exec 3<>"/dev/tcp/${host:-127.0.0.1}/${port}" && exec 3>&-
}
if ! wait_until 30 "the local API on ${LOCAL_API_ADDRESS}" local_api_up; then
  tail -n 20 "$KUBELET_LOG" >&2
  die "the local API is not serving; log: ${KUBELET_LOG}"
fi
kubectl=kubectl
[[ -x ${BIN_DIR}/kubectl ]] && kubectl=${BIN_DIR}/kubectl
command -v "$kubectl" >/dev/null || log "no kubectl found: build it with bash hack/build-cluster-tools.sh kubectl"
log "kubeconfig for kubectl: ${LOCAL_KUBECONFIG}"
log "try: ${kubectl} --kubeconfig ${LOCAL_KUBECONFIG} get pods"
