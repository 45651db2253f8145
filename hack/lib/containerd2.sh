# Builds containerd 2.x (test/tools/containerd2) and runc
# (test/tools/runc) into _output/bin when missing or older than their
# modules. Source after common.sh (which has containerd2_config); used by
# setup-containerd2.sh and by private-containerd.sh's 2.x mode.

C2_BIN=${BIN_DIR}/containerd2
RUNC_BIN=${BIN_DIR}/runc/runc

build_containerd2() {
  local tools=${REPO_ROOT}/test/tools/containerd2 t0
  if [[ -x ${C2_BIN}/containerd && -x ${C2_BIN}/containerd-shim-runc-v2 &&
    ! ${tools}/go.mod -nt ${C2_BIN}/containerd && ! ${tools}/go.sum -nt ${C2_BIN}/containerd ]]; then
    return
  fi
  t0=$(now_ms)
  mkdir -p "$C2_BIN"
  (cd "$tools" && go build -tags "no_btrfs no_devmapper no_zfs no_aufs" -o "${C2_BIN}/" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)
  touch "${C2_BIN}/containerd" "${C2_BIN}/containerd-shim-runc-v2"
  log "built containerd $("${C2_BIN}/containerd" --version | awk '{print $3}') in $(($(now_ms) - t0))ms"
}

# build_runc: runc with seccomp (cgo, Debian's libseccomp-dev). Debian's
# runc 1.1.5 has no idmapped mounts, which containerd 2.x needs to offer
# user namespaces (hostUsers: false).
build_runc() {
  local tools=${REPO_ROOT}/test/tools/runc t0
  if [[ -x $RUNC_BIN && ! ${tools}/go.mod -nt $RUNC_BIN && ! ${tools}/go.sum -nt $RUNC_BIN ]]; then
    return
  fi
  if [[ ! -f /usr/include/seccomp.h ]]; then
    log "installing libseccomp-dev (runc's seccomp support)"
    apt-get install -y libseccomp-dev pkg-config >/dev/null
  fi
  t0=$(now_ms)
  mkdir -p "$(dirname "$RUNC_BIN")"
  (cd "$tools" && CGO_ENABLED=1 go build -tags "seccomp urfave_cli_no_docs" -o "$RUNC_BIN" github.com/opencontainers/runc)
  log "built runc $("$RUNC_BIN" --version | awk 'NR == 1 {print $3}') in $(($(now_ms) - t0))ms"
}
