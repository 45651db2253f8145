#!/usr/bin/env bash
# Prepares this machine to run pods: installs containerd, runc, the CNI
# plugins and a static busybox when missing, writes containerd's config and
# the CNI network, starts containerd, builds and imports the test images and
# serves a registry on 127.0.0.1:5000 holding busybox. Idempotent: run it as
# often as you like (root, no systemd needed). Undo with hack/stop-node.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PACKAGES=(containerd runc containernetworking-plugins busybox-static iptables dbus dbus-daemon)
CNI_BIN_DIR=/usr/lib/cni
CERTS_DIR=/etc/containerd/certs.d

install_packages() {
  local missing=()
  command -v containerd >/dev/null && command -v ctr >/dev/null &&
    command -v containerd-shim-runc-v2 >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [[ -x ${CNI_BIN_DIR}/bridge && -x ${CNI_BIN_DIR}/host-local && -x ${CNI_BIN_DIR}/portmap && -x ${CNI_BIN_DIR}/loopback ]] ||
    missing+=(containernetworking-plugins)
  # Debian's dynamically linked "busybox" would not run inside an image.
  [[ $(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null) == "install ok installed" ]] || missing+=(busybox-static)
  command -v iptables >/dev/null || missing+=(iptables) # portmap (hostPort) needs it
  # The systemd cgroup driver's tests run a private bus with a systemd stand-in.
  command -v dbus-daemon >/dev/null || missing+=(dbus-daemon)
  if ((${#missing[@]} == 0)); then
    return
  fi
  log "packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# containerd_config prints our containerd config: the packaged default with
# the settings this machine needs (see docs/ENVIRONMENT.md), plus the
# TEST_RUNTIME_HANDLER runtime for RuntimeClass tests.
containerd_config() {
  {
    containerd_default_config
    test_handler_v2
  }
}

containerd_default_config() {
  containerd config default | sed \
    -e 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' \
    -e "s|sandbox_image = \".*\"|sandbox_image = \"${SANDBOX_IMAGE}\"|" \
    -e "s|bin_dir = \".*\"|bin_dir = \"${CNI_BIN_DIR}\"|" \
    -e 's|conf_dir = ".*"|conf_dir = "/etc/cni/net.d"|' \
    -e 's|SystemdCgroup = .*|SystemdCgroup = false|' \
    -e "s|config_path = \"\"|config_path = \"${CERTS_DIR}\"|"
}

# install_file PATH CONTENT: writes PATH only when its content differs;
# returns 0 when it changed the file.
install_file() {
  local path=$1 content=$2
  if [[ -f $path && "$(<"$path")" == "$content" ]]; then
    return 1
  fi
  mkdir -p "$(dirname "$path")"
  printf '%s\n' "$content" >"${path}.tmp"
  mv "${path}.tmp" "$path"
}

write_configs() {
  local cfg changed=1
  cfg=$(containerd_config)
  for want in 'restrict_oom_score_adj = true' "sandbox_image = \"${SANDBOX_IMAGE}\"" \
    "bin_dir = \"${CNI_BIN_DIR}\"" "config_path = \"${CERTS_DIR}\"" 'SystemdCgroup = false' \
    "runtimes.${TEST_RUNTIME_HANDLER}]"; do
    grep -qF "$want" <<<"$cfg" || die "containerd config: could not set '${want}'"
  done
  install_file "$CONTAINERD_CONFIG" "$cfg" && changed=0

  # Plain-HTTP access to the loopback registry through the CRI.
  local host
  # localhost:5001 is the basic-auth proxy the e2e tests put in front of it.
  for host in localhost:5000 127.0.0.1:5000 localhost:5001; do
    install_file "${CERTS_DIR}/${host}/hosts.toml" "server = \"http://${host}\"

[host.\"http://${host}\"]
  capabilities = [\"pull\", \"resolve\", \"push\"]" && changed=0
  done

  # One bridge network without masquerade or default route: pods reach each
  # other and the host (10.88.0.1), nothing beyond. containerd itself brings
  # up each pod's lo with the loopback plugin from bin_dir.
  install_file "$CNI_CONF" '{
  "cniVersion": "1.0.0",
  "name": "seed-kubelet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.88.0.0/16"}]],
        "routes": []
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}' && changed=0
  local others
  others=$(find /etc/cni/net.d -maxdepth 1 -type f \( -name '*.conf' -o -name '*.conflist' -o -name '*.json' \) ! -path "$CNI_CONF" | sort)
  [[ -z $others ]] || log "cni: warning: other configs in /etc/cni/net.d may take precedence: ${others//$'\n'/ }"
  return $changed
}

start_containerd() {
  local pidfile=${RUN_DIR}/containerd.pid restart=$1 t0
  if containerd_answers; then
    if [[ $restart == yes ]]; then
      pid_alive "$pidfile" || die "config changed but containerd was not started by this script; restart it yourself"
      log "containerd: config changed, restarting"
      stop_daemon "$pidfile" containerd
    else
      log "containerd: already running"
      return
    fi
  fi
  t0=$(now_ms)
  start_daemon "$pidfile" "$CONTAINERD_LOG" containerd --config "$CONTAINERD_CONFIG"
  if ! wait_until 30 "containerd on ${CONTAINERD_SOCK}" containerd_answers; then
    tail -n 20 "$CONTAINERD_LOG" >&2
    die "containerd did not answer; log: ${CONTAINERD_LOG}"
  fi
  if ! ctr --address "$CONTAINERD_SOCK" plugins ls | grep -Eq 'io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*ok'; then
    grep -i 'cri' "$CONTAINERD_LOG" | tail -n 10 >&2
    die "containerd's CRI plugin did not load; log: ${CONTAINERD_LOG}"
  fi
  log "containerd: started (pid $(<"$pidfile")) in $(($(now_ms) - t0))ms, log ${CONTAINERD_LOG}"
}

# image_digest NAME prints the manifest digest containerd holds for NAME.
image_digest() {
  ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls "name==$1" | awk 'NR > 1 { print $3 }'
}

build_images() {
  local images_dir=${OUT_DIR}/images rootfs pause_digest busybox_digest applet
  mkdir -p "$BIN_DIR" "$images_dir"
  (cd "$REPO_ROOT" && go build -o "${BIN_DIR}/image-build" ./test/images/build)

  rootfs=${images_dir}/pause-rootfs
  rm -rf "$rootfs" && mkdir -p "$rootfs"
  (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "${rootfs}/pause" ./test/images/pause)
  pause_digest=$("${BIN_DIR}/image-build" -rootfs "$rootfs" -o "${images_dir}/pause.tar" \
    -name "$SANDBOX_IMAGE" -entrypoint '["/pause"]')

  rootfs=${images_dir}/busybox-rootfs
  rm -rf "$rootfs"
  mkdir -p "$rootfs"/{bin,usr/bin,tmp,root,var,home,dev,proc,sys}
  cp -r "${REPO_ROOT}/test/images/busybox/rootfs/." "$rootfs/"
  cp /bin/busybox "${rootfs}/usr/bin/busybox"
  chmod 1777 "${rootfs}/tmp"
  chmod 700 "${rootfs}/root"
  for applet in $(/bin/busybox --list) busybox; do
    ln -sf /usr/bin/busybox "${rootfs}/bin/${applet}"
  done
  busybox_digest=$("${BIN_DIR}/image-build" -rootfs "$rootfs" -o "${images_dir}/busybox.tar" \
    -name "$BUSYBOX_IMAGE" -name docker.io/library/busybox:latest -cmd '["sh"]')

  import_image "${images_dir}/pause.tar" "$pause_digest" "$SANDBOX_IMAGE"
  import_image "${images_dir}/busybox.tar" "$busybox_digest" "$BUSYBOX_IMAGE" docker.io/library/busybox:latest
  BUSYBOX_TAR=${images_dir}/busybox.tar
  BUSYBOX_DIGEST=$busybox_digest
}

# import_image TAR DIGEST NAME...: imports TAR unless every NAME already
# points at DIGEST.
import_image() {
  local tar=$1 digest=$2 name
  shift 2
  for name in "$@"; do
    if [[ $(image_digest "$name") != "$digest" ]]; then
      ctr --address "$CONTAINERD_SOCK" -n k8s.io images import "$tar" >/dev/null
      for name in "$@"; do
        [[ $(image_digest "$name") == "$digest" ]] || die "import of ${tar}: ${name} is not ${digest}"
      done
      log "images: imported $* (${digest:7:12})"
      return
    fi
  done
  log "images: $* up to date"
}

registry_answers() {
  "${BIN_DIR}/crane" catalog "$REGISTRY_ADDR" --insecure >/dev/null 2>&1
}

start_registry() {
  local pidfile=${RUN_DIR}/registry.pid marker=${RUN_DIR}/registry-busybox.digest
  local tools=${REPO_ROOT}/test/tools
  if [[ ! -x ${BIN_DIR}/crane || ${tools}/go.mod -nt ${BIN_DIR}/crane || ${tools}/go.sum -nt ${BIN_DIR}/crane ]]; then
    (cd "$tools" && go build -o "${BIN_DIR}/crane" github.com/google/go-containerregistry/cmd/crane)
    touch "${BIN_DIR}/crane" # go build leaves an up-to-date binary untouched
  fi
  if ! registry_answers; then
    pid_alive "$pidfile" && die "registry process $(<"$pidfile") is not answering on ${REGISTRY_ADDR}"
    start_daemon "$pidfile" "$REGISTRY_LOG" "${BIN_DIR}/crane" registry serve --address "$REGISTRY_ADDR"
    wait_until 15 "registry on ${REGISTRY_ADDR}" registry_answers || die "registry did not start; log: ${REGISTRY_LOG}"
    rm -f "$marker"
    log "registry: serving on ${REGISTRY_ADDR} (pid $(<"$pidfile")), log ${REGISTRY_LOG}"
  fi
  # The registry keeps images in memory: push when it lost them or they changed.
  if [[ -f $marker && $(<"$marker") == "$BUSYBOX_DIGEST" ]] &&
    "${BIN_DIR}/crane" digest "localhost:5000/busybox:1.36" --insecure >/dev/null 2>&1; then
    log "registry: localhost:5000/busybox:1.36 up to date"
    return
  fi
  "${BIN_DIR}/crane" push "$BUSYBOX_TAR" localhost:5000/busybox:1.36 --insecure >/dev/null 2>&1 ||
    die "crane push localhost:5000/busybox:1.36 failed"
  # pulltest is busybox with its own config digest, hence its own image ID:
  # tests may remove and pull it without touching the busybox they run on
  # (CRI RemoveImage drops every tag of an image ID).
  "${BIN_DIR}/crane" mutate localhost:5000/busybox:1.36 --env PULLTEST=1 -t localhost:5000/pulltest:1 --insecure >/dev/null 2>&1 ||
    die "crane mutate localhost:5000/pulltest:1 failed"
  echo "$BUSYBOX_DIGEST" >"$marker"
  log "registry: pushed localhost:5000/busybox:1.36 and localhost:5000/pulltest:1"
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root"
  command -v go >/dev/null || die "go is not in PATH (expected /usr/local/go/bin/go)"
  local t0 restart=no
  t0=$(now_ms)
  mkdir -p "$RUN_DIR"
  install_packages
  if write_configs; then
    log "configs: written (${CONTAINERD_CONFIG}, ${CERTS_DIR}, ${CNI_CONF})"
    restart=yes
  fi
  start_containerd "$restart"
  build_images
  start_registry
  log "node ready in $(($(now_ms) - t0))ms (CRI endpoint unix://${CONTAINERD_SOCK})"
}

main "$@"
