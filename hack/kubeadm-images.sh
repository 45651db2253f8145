#!/usr/bin/env bash
# Loads the control-plane images `kubeadm init` runs as static pods into a
# containerd, built here from the binaries of hack/build-cluster-tools.sh
# (nothing is pulled): each image is one layer holding the static binary in
# /usr/local/bin, tagged with the name kubeadm v1.36.3 asks for
# (`kubeadm config images list`):
#   registry.k8s.io/kube-apiserver:v1.36.3           _output/bin/kube-apiserver
#   registry.k8s.io/kube-controller-manager:v1.36.3  _output/bin/kube-controller-manager
#   registry.k8s.io/kube-scheduler:v1.36.3           _output/bin/kube-scheduler
#   registry.k8s.io/etcd:<kubeadm's tag>             _output/bin/etcd (3.6.x from go.etcd.io)
#   registry.k8s.io/pause:<kubeadm's tag>            the local pause image (hack/setup-node.sh)
# kube-proxy and CoreDNS are left out: the kubeadm e2e tests skip those addon
# phases (see test/e2e/kubeadm_test.go).
#
# The tarballs are cached in _output/images/kubeadm and rebuilt when a binary
# is newer. Usage: hack/kubeadm-images.sh CONTAINERD_ADDRESS (a socket path or
# unix:// endpoint). Needs root and hack/build-cluster-tools.sh's binaries
# (kubeadm among them).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ADDRESS=${1:?usage: $0 CONTAINERD_ADDRESS}
ADDRESS=${ADDRESS#unix://}
KUBE_VERSION=v1.36.3
IMAGES_DIR=${OUT_DIR}/images/kubeadm
PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

ctr_() { ctr --address "$ADDRESS" -n k8s.io "$@"; }

# build NAME REF: IMAGES_DIR/NAME.tar from BIN_DIR/NAME, unless current.
build() {
  local name=$1 ref=$2 bin=${BIN_DIR}/$1 tar=${IMAGES_DIR}/$1.tar rootfs
  [[ -x $bin ]] || die "${bin} is missing: run hack/build-cluster-tools.sh ${name}"
  if [[ -f $tar && $tar -nt $bin && -f ${tar}.ref && $(<"${tar}.ref") == "$ref" && -s ${tar}.digest ]]; then
    return
  fi
  rootfs=$(mktemp -d "${IMAGES_DIR}/.rootfs-${name}.XXXXXX")
  mkdir -p "${rootfs}/usr/local/bin" "${rootfs}/tmp" "${rootfs}/etc"
  chmod 1777 "${rootfs}/tmp"
  cp "$bin" "${rootfs}/usr/local/bin/${name}"
  "${BIN_DIR}/image-build" -rootfs "$rootfs" -o "${tar}.tmp" -name "$ref" -env "$PATH_ENV" >"${tar}.digest" ||
    { rm -rf "$rootfs" "${tar}.tmp"; die "image-build ${ref} failed"; }
  rm -rf "$rootfs"
  mv -f "${tar}.tmp" "$tar"
  echo "$ref" >"${tar}.ref"
  log "built ${ref}"
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root"
  [[ -x ${BIN_DIR}/kubeadm ]] || die "${BIN_DIR}/kubeadm is missing: run hack/build-cluster-tools.sh kubeadm"
  [[ -x ${BIN_DIR}/image-build ]] || die "${BIN_DIR}/image-build is missing: run hack/setup-node.sh"
  mkdir -p "$IMAGES_DIR"
  exec 7>"${IMAGES_DIR}/.lock"
  flock -w 600 7 || die "timed out waiting for another kubeadm-images.sh"
  local refs ref name pause="" t0
  t0=$(now_ms)
  refs=$("${BIN_DIR}/kubeadm" config images list --kubernetes-version "$KUBE_VERSION")
  for ref in $refs; do
    name=${ref##*/}
    name=${name%%:*}
    case $name in
    kube-apiserver | kube-controller-manager | kube-scheduler | etcd)
      build "$name" "$ref"
      # Import unless the runtime already holds this very image.
      if [[ $(ctr_ images ls "name==${ref}" | awk 'NR > 1 { print $3 }') != "$(<"${IMAGES_DIR}/${name}.tar.digest")" ]]; then
        ctr_ images import "${IMAGES_DIR}/${name}.tar" >/dev/null || die "import ${ref} into ${ADDRESS} failed"
      fi
      ;;
    pause) pause=$ref ;;
    esac
  done
  [[ -n $pause ]] || die "kubeadm lists no pause image"
  if [[ -z $(ctr_ images ls -q "name==${pause}") ]]; then
    ctr_ images import "${OUT_DIR}/images/pause.tar" >/dev/null
    ctr_ images tag --force "$SANDBOX_IMAGE" "$pause" >/dev/null
  fi
  log "kubeadm control-plane images ready in ${ADDRESS} after $(($(now_ms) - t0))ms"
}

main "$@"
