#!/usr/bin/env bash
# Runs our kubelet in standalone mode on this machine: prepares the node
# (hack/setup-node.sh), builds ./cmd/kubelet and starts it in the background
# with examples/kubelet-config.yaml. Extra arguments go to the kubelet.
# A running instance started by this script is replaced. Stop: hack/stop-node.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

CONFIG=${KUBELET_CONFIG:-${REPO_ROOT}/examples/kubelet-config.yaml}
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
start_daemon "$PIDFILE" "$KUBELET_LOG" "${BIN_DIR}/kubelet" --config "$CONFIG" "$@"
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
if wait_until 120 "example web pod Running" web_running; then
  log "example web pod is Running; try: curl -s 127.0.0.1:10255/pods"
else
  tail -n 20 "$KUBELET_LOG" >&2
  die "the example web pod did not reach Running; log: ${KUBELET_LOG}"
fi
