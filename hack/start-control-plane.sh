#!/usr/bin/env bash
# Starts the control plane the cluster-mode tests run against, all on
# loopback: etcd 3.6, kube-apiserver (https://127.0.0.1:6443),
# kube-controller-manager and kube-scheduler, Kubernetes v1.36.3 as built by
# hack/build-cluster-tools.sh into _output/bin. Generates the PKI first (see
# hack/lib/cluster.sh for the layout). Idempotent: what already runs and
# answers is left alone, a component whose binary, certificates or flags
# changed is restarted (the flags it runs with are read from
# /proc/PID/cmdline). Needs root. Undo with hack/stop-control-plane.sh.
# Restarting takes the control plane away for other users of the machine:
# run this script under `flock /tmp/seed-e2e.lock` (the e2e tests do).
#
# The apiserver reaches kubelets at their node's InternalIP first (then
# Hostname): kubelets under test report InternalIP 127.0.0.1, and their
# serving certificates (hack/make-node-credentials.sh) carry 127.0.0.1 and the
# node name as SANs, so no /etc/hosts entries are needed.
#
# The "kubernetes" Service exists but has no endpoints: the apiserver's only
# address is 127.0.0.1, which Endpoints may not hold, so its endpoint
# reconciler is off (--endpoint-reconciler-type=none) instead of failing every
# 10s. There is no kube-proxy either: pods cannot reach the apiserver.
#
# Environment: ETCD_UNSAFE_NO_FSYNC=1 runs etcd without fsync (faster writes
# on slow disks; the data does not survive a machine crash). SEED_CP=NAME
# and the *_PORT variables start a separate control plane instead (see
# hack/lib/cluster.sh). APISERVER_EXTRA_ARGS adds kube-apiserver flags (split
# at blanks), e.g. an audit log for hack/bench.sh --cluster.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

ETCD_PID=$(pidfile etcd)
APISERVER_PID=$(pidfile kube-apiserver)
CM_PID=$(pidfile kube-controller-manager)
SCHEDULER_PID=$(pidfile kube-scheduler)
ETCD_LOG=$(logfile etcd)
APISERVER_LOG=$(logfile kube-apiserver)
CM_LOG=$(logfile kube-controller-manager)
SCHEDULER_LOG=$(logfile kube-scheduler)
START_LOCK=${RUN_DIR}/${CP_PREFIX}control-plane.lock

check_binaries() {
  local b missing=()
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    [[ -x ${BIN_DIR}/${b} ]] || missing+=("${BIN_DIR}/${b}")
  done
  ((${#missing[@]} == 0)) || die "missing ${missing[*]}: build them with hack/build-cluster-tools.sh"
}

generate_pki() {
  local t0
  t0=$(now_ms)
  lock_pki
  local stamp=${PKI_STAMP} files=() n
  for n in apiserver apiserver-kubelet-client admin controller-manager scheduler front-proxy-ca front-proxy-client; do
    files+=("${PKI_DIR}/${n}.crt" "${PKI_DIR}/${n}.key")
  done
  files+=("${PKI_DIR}/sa.key" "${PKI_DIR}/sa.pub" "$ADMIN_KUBECONFIG"
    "${KUBECONFIG_DIR}/controller-manager.kubeconfig" "${KUBECONFIG_DIR}/scheduler.kubeconfig")
  if pki_fresh "$stamp" "${files[@]}"; then
    unlock_pki
    return
  fi
  ensure_ca
  if [[ ! -f ${PKI_DIR}/sa.key || ! -f ${PKI_DIR}/sa.pub ]]; then
    (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "${PKI_DIR}/sa.key.tmp" 2>/dev/null) ||
      die "openssl: could not create the service-account key"
    openssl pkey -in "${PKI_DIR}/sa.key.tmp" -pubout -out "${PKI_DIR}/sa.pub" 2>/dev/null
    mv -f "${PKI_DIR}/sa.key.tmp" "${PKI_DIR}/sa.key"
    PKI_CHANGED=yes
  fi
  issue_cert apiserver "$PKI_DIR" "/CN=kube-apiserver" server \
    DNS:localhost DNS:kubernetes DNS:kubernetes.default DNS:kubernetes.default.svc \
    DNS:kubernetes.default.svc.cluster.local IP:127.0.0.1 IP:10.0.0.1
  issue_cert apiserver-kubelet-client "$PKI_DIR" "/O=system:masters/CN=kube-apiserver-kubelet-client" client
  issue_cert admin "$PKI_DIR" "/O=system:masters/CN=kubernetes-admin" client
  issue_cert controller-manager "$PKI_DIR" "/CN=system:kube-controller-manager" client
  issue_cert scheduler "$PKI_DIR" "/CN=system:kube-scheduler" client
  # The aggregation layer's own CA, as kubeadm's: extension API servers
  # trust requests proxied with its client certificate
  # (--requestheader-client-ca-file), and only with it.
  ensure_ca front-proxy-ca front-proxy-ca
  ISSUER=front-proxy-ca issue_cert front-proxy-client "$PKI_DIR" "/CN=front-proxy-client" client
  kubeconfig_current "$ADMIN_KUBECONFIG" "${PKI_DIR}/admin.crt" ||
    write_kubeconfig "$ADMIN_KUBECONFIG" kubernetes-admin "${PKI_DIR}/admin.crt" "${PKI_DIR}/admin.key"
  kubeconfig_current "${KUBECONFIG_DIR}/controller-manager.kubeconfig" "${PKI_DIR}/controller-manager.crt" ||
    write_kubeconfig "${KUBECONFIG_DIR}/controller-manager.kubeconfig" system:kube-controller-manager \
      "${PKI_DIR}/controller-manager.crt" "${PKI_DIR}/controller-manager.key"
  kubeconfig_current "${KUBECONFIG_DIR}/scheduler.kubeconfig" "${PKI_DIR}/scheduler.crt" ||
    write_kubeconfig "${KUBECONFIG_DIR}/scheduler.kubeconfig" system:kube-scheduler \
      "${PKI_DIR}/scheduler.crt" "${PKI_DIR}/scheduler.key"
  pki_stamp "$stamp"
  unlock_pki
  if [[ $PKI_CHANGED == yes ]]; then
    log "pki: written to ${PKI_DIR} in $(($(now_ms) - t0))ms"
  fi
}

# launch PIDFILE LOG CMD...: start_daemon (which closes our lock
# descriptors and the caller's) with a line in the log.
launch() {
  local pidfile=$1 logfile=$2
  shift 2
  echo "=== $(date -Is) starting: $*" >>"$logfile"
  start_daemon "$pidfile" "$logfile" "$@"
}

# stale PIDFILE: the recorded process runs a binary since replaced (rebuilt).
stale() {
  pid_alive "$1" && [[ $(readlink "/proc/$(<"$1")/exe" 2>/dev/null) == *" (deleted)" ]]
}

api() { # api PATH: GET PATH from the apiserver as cluster-admin.
  curl -sf --max-time 3 --cacert "${PKI_DIR}/ca.crt" --cert "${PKI_DIR}/admin.crt" \
    --key "${PKI_DIR}/admin.key" "${APISERVER_URL}$1"
}

etcd_healthy() {
  curl -sf --max-time 2 "${ETCD_CLIENT_URL}/health" | grep -q '"health":"true"'
}
apiserver_ready() { [[ $(api /readyz) == ok ]]; }
cm_healthy() { [[ $(curl -sk --max-time 2 "https://127.0.0.1:${CONTROLLER_MANAGER_PORT}/healthz") == ok ]]; }
scheduler_healthy() { [[ $(curl -sk --max-time 2 "https://127.0.0.1:${SCHEDULER_PORT}/healthz") == ok ]]; }
default_namespace_ready() {
  api /api/v1/namespaces/default/serviceaccounts/default >/dev/null &&
    api /api/v1/namespaces/default/configmaps/kube-root-ca.crt >/dev/null
}

# port_taken PORT: something listens on 127.0.0.1:PORT.
port_taken() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# cmd_changed NAME: the running component NAME has other arguments than
# those it would be started with now (its *_CMD array), the binary's path
# aside: each worktree reaches the shared _output/bin by a path of its own.
cmd_changed() {
  local pidfile running want
  pidfile=$(pidfile "$1")
  local -n cmd=$(cmd_var "$1")
  running=$(tr '\0' '\n' <"/proc/$(<"$pidfile")/cmdline" | tail -n +2) || return 1
  want=$(printf '%s\n' "${cmd[@]:1}")
  [[ $running != "$want" ]]
}

# cmd_var NAME: the array holding component NAME's command line.
cmd_var() {
  case $1 in
  etcd) echo ETCD_CMD ;;
  kube-apiserver) echo APISERVER_CMD ;;
  kube-controller-manager) echo CM_CMD ;;
  kube-scheduler) echo SCHEDULER_CMD ;;
  *) die "cmd_var: unknown component $1" ;;
  esac
}

# restart_changed: stops, dependents first, each component whose binary was
# rebuilt since it started or (etcd aside) whose arguments differ from those
# it would be started with now or whose certificates changed, so that ensure
# starts it again. etcd keeps the flags it started with (its data and every
# watch would go through a restart for ETCD_UNSAFE_NO_FSYNC alone). A restarting apiserver takes the controller-
# manager and scheduler along: while they hold watches it takes a minute to
# exit.
restart_changed() {
  local name pidfile reason api_restarts=no
  pidfile=$APISERVER_PID
  if pid_alive "$pidfile" && { stale "$pidfile" || [[ $PKI_CHANGED == yes ]] || cmd_changed kube-apiserver; }; then
    api_restarts=yes
  fi
  for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    pidfile=$(pidfile "$name")
    pid_alive "$pidfile" || continue
    if stale "$pidfile"; then
      reason="binary rebuilt"
    elif [[ $name != etcd ]] && cmd_changed "$name"; then
      reason="flags changed"
    elif [[ $PKI_CHANGED == yes && $name != etcd ]]; then
      reason="certificates changed"
    elif [[ $api_restarts == yes && $name != etcd ]]; then
      reason="kube-apiserver restarts"
    else
      continue
    fi
    log "${name}: restarting (${reason})"
    stop_daemon "$pidfile" "$name" >/dev/null
  done
}

# ensure NAME PIDFILE LOG HEALTHCHECK PORT -- CMD...: starts NAME unless it
# runs (started by this script). Does not wait.
ensure() {
  local name=$1 pidfile=$2 logfile=$3 check=$4 port=$5
  shift 6
  if pid_alive "$pidfile"; then
    "$check" || log "${name}: running (pid $(<"$pidfile")), not answering yet"
    return
  fi
  if "$check"; then
    die "${name}: something not started by this script answers on port ${port}; stop it first"
  elif port_taken "$port"; then
    die "${name}: port ${port} is taken by another process"
  fi
  launch "$pidfile" "$logfile" "$@"
  STARTED+=("$name")
}

# await NAME PIDFILE LOG SECONDS HEALTHCHECK: waits until HEALTHCHECK passes;
# fails early when the process exits.
await() {
  local name=$1 pidfile=$2 logfile=$3 timeout=$4 check=$5 t0 deadline
  "$check" >/dev/null 2>&1 && return
  t0=$(now_ms)
  deadline=$((t0 + timeout * 1000))
  until "$check" >/dev/null 2>&1; do
    if ! pid_alive "$pidfile"; then
      tail -n 30 "$logfile" >&2
      die "${name} exited; log: ${logfile}"
    fi
    if (($(now_ms) >= deadline)); then
      tail -n 30 "$logfile" >&2
      die "${name} did not become healthy within ${timeout}s; log: ${logfile}"
    fi
    sleep 0.1
  done
  log "${name}: healthy after $(($(now_ms) - t0))ms"
}

# commands: the command line of each component, in ETCD_CMD, APISERVER_CMD,
# CM_CMD and SCHEDULER_CMD.
commands() {
  ETCD_CMD=(
    "${BIN_DIR}/etcd"
    --name=seed --data-dir="$ETCD_DATA_DIR"
    --listen-client-urls="$ETCD_CLIENT_URL" --advertise-client-urls="$ETCD_CLIENT_URL"
    --listen-peer-urls="$ETCD_PEER_URL" --initial-advertise-peer-urls="$ETCD_PEER_URL"
    --initial-cluster="seed=${ETCD_PEER_URL}" --log-level=warn
  )
  [[ ${ETCD_UNSAFE_NO_FSYNC:-0} == 1 ]] && ETCD_CMD+=(--unsafe-no-fsync)
  APISERVER_CMD=(
    "${BIN_DIR}/kube-apiserver"
    --etcd-servers="$ETCD_CLIENT_URL"
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT"
    --endpoint-reconciler-type=none
    --tls-cert-file="${PKI_DIR}/apiserver.crt" --tls-private-key-file="${PKI_DIR}/apiserver.key"
    --client-ca-file="${PKI_DIR}/ca.crt"
    --authorization-mode=Node,RBAC
    --enable-admission-plugins=NodeRestriction
    --enable-bootstrap-token-auth=true
    --allow-privileged=true
    --service-cluster-ip-range="$SERVICE_CIDR"
    --service-account-issuer="$SERVICE_ACCOUNT_ISSUER"
    --service-account-key-file="${PKI_DIR}/sa.pub"
    --service-account-signing-key-file="${PKI_DIR}/sa.key"
    --kubelet-client-certificate="${PKI_DIR}/apiserver-kubelet-client.crt"
    --kubelet-client-key="${PKI_DIR}/apiserver-kubelet-client.key"
    --kubelet-certificate-authority="${PKI_DIR}/ca.crt"
    --kubelet-preferred-address-types=InternalIP,Hostname
    # The aggregation layer (kubeadm's flags; see the top of this file).
    --requestheader-client-ca-file="${PKI_DIR}/front-proxy-ca.crt"
    --requestheader-allowed-names=front-proxy-client
    --requestheader-username-headers=X-Remote-User
    --requestheader-group-headers=X-Remote-Group
    --requestheader-extra-headers-prefix=X-Remote-Extra-
    --proxy-client-cert-file="${PKI_DIR}/front-proxy-client.crt"
    --proxy-client-key-file="${PKI_DIR}/front-proxy-client.key"
    --v=1
  )
  # APISERVER_EXTRA_ARGS: more flags, split at blanks (e.g. an audit log for
  # a control plane of a benchmark's own).
  # shellcheck disable=SC2206
  [[ -n ${APISERVER_EXTRA_ARGS:-} ]] && APISERVER_CMD+=(${APISERVER_EXTRA_ARGS})
  local cm_kc=${KUBECONFIG_DIR}/controller-manager.kubeconfig sched_kc=${KUBECONFIG_DIR}/scheduler.kubeconfig
  CM_CMD=(
    "${BIN_DIR}/kube-controller-manager"
    --kubeconfig="$cm_kc" --authentication-kubeconfig="$cm_kc" --authorization-kubeconfig="$cm_kc"
    --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT"
    --leader-elect=false
    --use-service-account-credentials=true
    --service-account-private-key-file="${PKI_DIR}/sa.key"
    --root-ca-file="${PKI_DIR}/ca.crt"
    --cluster-signing-cert-file="${PKI_DIR}/ca.crt" --cluster-signing-key-file="${PKI_DIR}/ca.key"
    --service-cluster-ip-range="$SERVICE_CIDR"
    --controllers='*,bootstrapsigner,tokencleaner'
    --v=2
  )
  SCHEDULER_CMD=(
    "${BIN_DIR}/kube-scheduler"
    --kubeconfig="$sched_kc" --authentication-kubeconfig="$sched_kc" --authorization-kubeconfig="$sched_kc"
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT"
    --leader-elect=false
    --v=2
  )
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root"
  local t0 etcd_version
  t0=$(now_ms)
  STARTED=()
  check_binaries
  ensure_tools
  mkdir -p "$RUN_DIR" "$CP_STATE_DIR"
  # One start at a time (tests may call this script in parallel).
  exec 8>"$START_LOCK"
  flock -w 180 8 || die "timed out waiting for another start-control-plane.sh"

  generate_pki
  commands
  restart_changed

  mkdir -p "$ETCD_DATA_DIR" && chmod 700 "$ETCD_DATA_DIR"
  ensure etcd "$ETCD_PID" "$ETCD_LOG" etcd_healthy "$ETCD_CLIENT_PORT" -- "${ETCD_CMD[@]}"
  await etcd "$ETCD_PID" "$ETCD_LOG" 20 etcd_healthy
  etcd_version=$(curl -sf --max-time 2 "${ETCD_CLIENT_URL}/version" | sed -n 's/.*"etcdserver":"\([^"]*\)".*/\1/p')
  [[ $etcd_version == 3.[6-9]* ]] || die "etcd on ${ETCD_CLIENT_URL} is ${etcd_version:-unknown}; kube-apiserver 1.36 needs 3.6"

  ensure kube-apiserver "$APISERVER_PID" "$APISERVER_LOG" apiserver_ready "$APISERVER_PORT" -- "${APISERVER_CMD[@]}"
  await kube-apiserver "$APISERVER_PID" "$APISERVER_LOG" 90 apiserver_ready

  # Started once the apiserver is ready: the controller-manager gives up
  # when the apiserver is not healthy within 10s of its start.
  ensure kube-controller-manager "$CM_PID" "$CM_LOG" cm_healthy "$CONTROLLER_MANAGER_PORT" -- "${CM_CMD[@]}"
  ensure kube-scheduler "$SCHEDULER_PID" "$SCHEDULER_LOG" scheduler_healthy "$SCHEDULER_PORT" -- "${SCHEDULER_CMD[@]}"
  await kube-controller-manager "$CM_PID" "$CM_LOG" 60 cm_healthy
  await kube-scheduler "$SCHEDULER_PID" "$SCHEDULER_LOG" 60 scheduler_healthy
  # Pods in "default" need its service account and root CA config map, which
  # the controller-manager creates shortly after it starts.
  local t1
  t1=$(now_ms)
  if ! default_namespace_ready; then
    wait_until 60 "the default service account and kube-root-ca.crt" default_namespace_ready ||
      die "the controller-manager did not populate namespace default; log: ${CM_LOG}"
    log "namespace default: service account and kube-root-ca.crt after $(($(now_ms) - t1))ms"
  fi

  if ((${#STARTED[@]})); then
    log "started ${STARTED[*]}; control plane up in $(($(now_ms) - t0))ms"
  else
    log "control plane already running ($(($(now_ms) - t0))ms)"
  fi
  log "apiserver ${APISERVER_URL}, admin kubeconfig ${ADMIN_KUBECONFIG}, CA ${PKI_DIR}/ca.crt"
  log "logs /var/log/seed-${CP_PREFIX}{etcd,kube-apiserver,kube-controller-manager,kube-scheduler}.log"
}

main "$@"
