# Shared helpers for hack/*.sh. Source it; it sets REPO_ROOT and the paths
# that setup-node.sh, stop-node.sh and run-standalone.sh agree on.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT_DIR="${REPO_ROOT}/_output"
BIN_DIR="${OUT_DIR}/bin"
RUN_DIR=/run/seed-kubelet # pidfiles of what our scripts started

CONTAINERD_CONFIG=/etc/containerd/config.toml
CONTAINERD_SOCK=/run/containerd/containerd.sock
CONTAINERD_LOG=/var/log/containerd.log
CNI_CONF=/etc/cni/net.d/10-seed-kubelet.conflist
REGISTRY_ADDR=127.0.0.1:5000
REGISTRY_LOG=/var/log/seed-registry.log
SANDBOX_IMAGE=registry.k8s.io/pause:3.10
BUSYBOX_IMAGE=docker.io/library/busybox:1.36

export PATH="/usr/local/go/bin:${PATH}"

log() { echo "$(basename "$0"): $*"; }
die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

# now_ms prints milliseconds since the epoch (for timings).
now_ms() { date +%s%3N; }

# wait_until SECONDS DESCRIPTION CMD...: runs CMD every 0.1s until it succeeds
# or SECONDS pass.
wait_until() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$(($(date +%s) + timeout))
  until "$@" >/dev/null 2>&1; do
    if (($(date +%s) >= deadline)); then
      echo "$(basename "$0"): timed out after ${timeout}s waiting for ${what}" >&2
      return 1
    fi
    sleep 0.1
  done
}

# pid_alive PIDFILE: true when PIDFILE names a live process.
pid_alive() {
  local pid
  [[ -f $1 ]] && pid=$(<"$1") && [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null
}

# start_daemon PIDFILE LOG CMD...: starts CMD detached from this shell (own
# session, stdin closed, output appended to LOG) and records its pid.
start_daemon() {
  local pidfile=$1 logfile=$2
  shift 2
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$logfile")"
  # Close every inherited descriptor above 2 first: a daemon started under
  # `flock FILE cmd` would otherwise hold the lock for as long as it runs.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && eval "exec ${fd}>&-" 2>/dev/null
    done
    exec setsid "$@"
  ) </dev/null >>"$logfile" 2>&1 &
  echo $! >"$pidfile"
}

# stop_daemon PIDFILE NAME: SIGTERM the recorded process, SIGKILL after 10s.
stop_daemon() {
  local pidfile=$1 name=$2 pid
  if ! pid_alive "$pidfile"; then
    rm -f "$pidfile"
    log "${name}: not running"
    return 0
  fi
  pid=$(<"$pidfile")
  kill -TERM "$pid"
  if ! wait_until 10 "${name} to exit" bash -c "! kill -0 ${pid}"; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  log "${name}: stopped (pid ${pid})"
}

# containerd_answers: containerd serves its API on CONTAINERD_SOCK (ctr would
# otherwise wait its default 10s connect timeout on a stale socket).
containerd_answers() {
  [[ -S $CONTAINERD_SOCK ]] &&
    ctr --address "$CONTAINERD_SOCK" --connect-timeout 1s --timeout 3s version >/dev/null 2>&1
}
