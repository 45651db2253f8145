#!/usr/bin/env bash
# Builds the control plane the cluster-mode tests run against, plus the
# upstream kubelet we compare with, into _output/bin:
#   etcd                     go.etcd.io/etcd/server/v3 (module test/tools/etcd)
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet
#                            k8s.io/kubernetes v1.36.3 (module test/tools/kubernetes)
#   csistandin               the CSI test stand-ins: a host-path driver, a
#                            node-driver-registrar and a provisioner/attacher
#                            (module test/tools/csi)
# The upstream kubelet lands in _output/bin/kubelet-upstream, so that nothing
# mistakes it for ours. kubeadm (same module) drives test/e2e's kubeadm
# init/join tests and their control-plane images (hack/kubeadm-images.sh). For hack/conformance.sh it also builds upstream's e2e
# suite (e2e.test, `go test -c` of k8s.io/kubernetes/test/e2e), the ginkgo
# CLI that runs it in parallel, and agnhost and nonewprivs, programs of
# upstream's test images (hack/conformance.sh packages them into images).
# metrics-server v0.8.0 (module test/tools/metrics-server) serves
# metrics.k8s.io for test/e2e's `kubectl top` test.
#
# A binary newer than its module's go.mod, go.sum and Go files (and this
# script) is kept; FORCE=1 rebuilds everything. The first build takes several minutes
# (kube-apiserver alone about 5 on 2 cores); later ones hit the Go build cache.
#
# Usage: hack/build-cluster-tools.sh [NAME...]
#   (default: all but kubeadm, which only the kubeadm e2e tests need,
#   metrics-server, which only test/e2e's kubectl top test needs, and
#   e2e.test, agnhost, nonewprivs and ginkgo, which only hack/conformance.sh
#   needs)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

KUBE_VERSION=v1.36.3
KUBE_MODULE=${REPO_ROOT}/test/tools/kubernetes
ETCD_MODULE=${REPO_ROOT}/test/tools/etcd
CSI_MODULE=${REPO_ROOT}/test/tools/csi
METRICS_SERVER_MODULE=${REPO_ROOT}/test/tools/metrics-server
SELF=${REPO_ROOT}/hack/build-cluster-tools.sh

# kubectl refuses to run without a parseable version ("could not parse
# pre-release/metadata"); the others report it in /version and user agents.
kube_ldflags() {
  local major minor pkg flags=""
  major=${KUBE_VERSION#v}
  minor=${major#*.}
  minor=${minor%%.*}
  major=${major%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
    flags+=" -X ${pkg}.gitTreeState=clean"
  done
  echo "${flags# }"
}

# NAME MODULE_DIR PACKAGE, one a line; "targets all" adds those built only
# on request.
targets() {
  cat <<EOF
etcd ${ETCD_MODULE} go.etcd.io/etcd/server/v3
kube-apiserver ${KUBE_MODULE} k8s.io/kubernetes/cmd/kube-apiserver
kube-controller-manager ${KUBE_MODULE} k8s.io/kubernetes/cmd/kube-controller-manager
kube-scheduler ${KUBE_MODULE} k8s.io/kubernetes/cmd/kube-scheduler
kubectl ${KUBE_MODULE} k8s.io/kubernetes/cmd/kubectl
kubelet-upstream ${KUBE_MODULE} k8s.io/kubernetes/cmd/kubelet
csistandin ${CSI_MODULE} github.com/seed-kubelet/kubelet/test/tools/csi
EOF
  # Built only when named (hack/conformance.sh does).
  [[ ${1:-} == all ]] || return 0
  cat <<EOF
kubeadm ${KUBE_MODULE} k8s.io/kubernetes/cmd/kubeadm
e2e.test ${KUBE_MODULE} k8s.io/kubernetes/test/e2e
agnhost ${KUBE_MODULE} k8s.io/kubernetes/test/images/agnhost
nonewprivs ${KUBE_MODULE} k8s.io/kubernetes/test/images/nonewprivs
ginkgo ${KUBE_MODULE} github.com/onsi/ginkgo/v2/ginkgo
metrics-server ${METRICS_SERVER_MODULE} sigs.k8s.io/metrics-server/cmd/metrics-server
EOF
}

# up_to_date BIN MODULE_DIR
up_to_date() {
  local bin=$1 dir=$2 dep
  [[ ${FORCE:-0} != 1 && -x $bin ]] || return 1
  # Sources in the module itself (the CSI stand-ins) count too.
  for dep in "${dir}/go.mod" "${dir}/go.sum" "$SELF" "$dir"/*.go; do
    [[ -e $dep ]] || continue
    [[ $bin -nt $dep ]] || return 1
  done
}

build_one() {
  local name=$1 dir=$2 pkg=$3 bin=${BIN_DIR}/$1 tmp t0 ldflags=""
  if up_to_date "$bin" "$dir"; then
    log "${name}: up to date"
    return
  fi
  [[ $pkg == k8s.io/kubernetes/* ]] && ldflags=$(kube_ldflags)
  # metrics-server stamps its version as its Makefile does (it shows in
  # --version and in its user agent towards the apiserver and kubelets).
  [[ $pkg == sigs.k8s.io/metrics-server/* ]] &&
    ldflags="-X k8s.io/client-go/pkg/version.gitVersion=$(cd "$dir" && go list -m -f '{{.Version}}' sigs.k8s.io/metrics-server)"
  tmp=$(mktemp -d "${BIN_DIR}/.build-${name}.XXXXXX")
  t0=$(now_ms)
  # Static, path-free builds like upstream's release binaries (which strip
  # symbols too; we keep them for profiling). The upstream kubelet is built
  # without cgo as well: with cgo every package above "net" would compile a
  # second time (minutes here) for a difference our tests do not see (the
  # pure-Go DNS resolver and user lookup).
  local build=(go build)
  [[ $name == *.test ]] && build=(go test -c)
  if ! (cd "$dir" && CGO_ENABLED=0 "${build[@]}" -trimpath -ldflags "$ldflags" -o "${tmp}/${name}" "$pkg"); then
    rm -rf "$tmp"
    die "${name}: ${build[*]} ${pkg} failed"
  fi
  mv -f "${tmp}/${name}" "$bin"
  rmdir "$tmp"
  log "${name}: built in $(($(now_ms) - t0))ms"
}

main() {
  command -v go >/dev/null || die "go is not in PATH (expected /usr/local/go/bin/go)"
  mkdir -p "$BIN_DIR"
  local t0 want=("$@") name dir pkg found
  t0=$(now_ms)
  # Read the list whole: "targets all | grep -q" fails under pipefail
  # when grep exits before targets has written everything (SIGPIPE).
  local known
  known=$(targets all | cut -d' ' -f1)
  for name in "${want[@]}"; do
    grep -qx -- "$name" <<<"$known" || die "unknown binary ${name}; known: $(tr '\n' ' ' <<<"$known")"
  done
  while read -r name dir pkg; do
    if ((${#want[@]})); then
      found=no
      for w in "${want[@]}"; do [[ $w == "$name" ]] && found=yes; done
      [[ $found == yes ]] || continue
    fi
    build_one "$name" "$dir" "$pkg"
  done < <(if ((${#want[@]})); then targets all; else targets; fi)
  log "cluster tools ready in ${BIN_DIR} after $(($(now_ms) - t0))ms"
}

main "$@"
