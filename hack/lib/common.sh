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
# A second runc handler both test containerds offer, for RuntimeClass tests
# (a RuntimeClass with handler runc-test runs its pods through it).
TEST_RUNTIME_HANDLER=runc-test
BUSYBOX_IMAGE=docker.io/library/busybox:1.36

export PATH="/usr/local/go/bin:${PATH}"

log() { echo "$(basename "$0"): $*"; }
die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

# now_ms prints milliseconds since the epoch (for timings).
now_ms() { date +%s%3N; }

# free_port: a TCP port nothing listens on now, from 20000-32000.
free_port() {
  local p
  for p in $(shuf -i 20000-32000 -n 100); do
    if ! ss -Htln "sport = :${p}" | grep -q .; then
      echo "$p"
      return
    fi
  done
  die "no free port"
}

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
# session, stdin closed, output appended to LOG, every other inherited
# descriptor closed) and records its pid. A daemon must not inherit its
# caller's lock files: one started under `flock /tmp/seed-e2e.lock ...`
# would hold the e2e lock for its whole life and block every later run.
start_daemon() {
  local pidfile=$1 logfile=$2
  shift 2
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$logfile")"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'for fd in /proc/self/fd/*; do fd=${fd##*/}; ((fd > 2)) && eval "exec ${fd}>&-" 2>/dev/null; done; exec "$@"' \
    "$(basename "$1")" "$@" </dev/null >>"$logfile" 2>&1 &
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

# test_handler_v2 prints the containerd 1.6 (config version 2) table of the
# TEST_RUNTIME_HANDLER runtime; appended to a config that lacks it.
test_handler_v2() {
  cat <<TOML

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.${TEST_RUNTIME_HANDLER}]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.${TEST_RUNTIME_HANDLER}.options]
    SystemdCgroup = false
TOML
}

# containerd2_config ROOT STATE SOCK [RUNC] prints a containerd 2.x config
# (version 4) with its own root, state and socket: the CRI settings this
# machine needs, runc as the default handler and TEST_RUNTIME_HANDLER beside
# it, both with RUNC as the runc binary when given.
containerd2_config() {
  local root=$1 state=$2 sock=$3 runc=${4:-} binary=""
  [[ -n $runc ]] && binary=$'\n'"          BinaryName = '${runc}'"
  cat <<TOML
version = 4
root = '${root}'
state = '${state}'
# NRI would share /var/run/nri with the other containerd.
disabled_plugins = ['io.containerd.nri.v1.nri']

[plugins]
  # Never the default socket: that belongs to the containerd 1.6 beside us.
  [plugins.'io.containerd.server.v1.grpc']
    address = '${sock}'
  [plugins.'io.containerd.server.v1.ttrpc']
    address = '${sock}.ttrpc'
  [plugins.'io.containerd.server.v1.debug']
    address = ''
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '${SANDBOX_IMAGE}'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/containerd/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false${binary}
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.${TEST_RUNTIME_HANDLER}]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.${TEST_RUNTIME_HANDLER}.options]
          SystemdCgroup = false${binary}
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '/etc/cni/net.d'
TOML
}
