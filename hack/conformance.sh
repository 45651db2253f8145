#!/usr/bin/env bash
# Runs upstream's node conformance specs (k8s.io/kubernetes v1.36.3
# test/e2e: every [NodeConformance] spec except [Serial], [Disruptive],
# [Flaky] and [Feature:*] ones) against our kubelet, and the same specs
# against the upstream kubelet on the same machine, as nodes of the shared
# test control plane; then prints a table spec -> outcome per kubelet
# (docs/conformance.md discusses one).
#
#   hack/conformance.sh [ours|upstream|both]      (default both)
#
# CONFORMANCE_FOCUS (regexps on the spec text, one a line; ginkgo ORs them)
# narrows the set, e.g. to one area:
#   CONFORMANCE_FOCUS='\[sig-node\] Probing container' hack/conformance.sh ours
# CONFORMANCE_SKIP adds one regexp to the skips below.
#
# How it runs them (both at once, unless told one):
#   - each kubelet on its own private containerd (hack/private-containerd.sh
#     conformance, conformance-upstream), as node conformance-<ours|upstream>
#     (CONFORMANCE_NAME replaces "conformance" in these names)
#     with credentials from hack/make-node-credentials.sh, and the same
#     KubeletConfiguration (cluster authn/authz, cgroupfs, no QoS cgroups,
#     private podLogsDir; see write_config), both with node IP and address
#     10.88.0.1, the CNI bridge (see main for why not loopback);
#   - the control plane is shared with other engineers' tests, whose nodes
#     come and go: each e2e run acts as its own user (conformance-<flavor>,
#     impersonated by the admin kubeconfig), and a mutating admission webhook
#     (test/conformance/pinpods, on loopback, failurePolicy Fail, only for
#     namespaces labelled e2e-framework) pins every pod a run creates to that
#     run's node, so no spec lands on someone else's node or the other
#     kubelet; the framework does not wait for other nodes to be Ready
#     (--allowed-not-ready-nodes=-1);
#   - no registry outside loopback: the test images are built here and pushed
#     to localhost:5000 (busybox and nonroot from Debian's static busybox,
#     agnhost and nonewprivs from upstream's Go sources, pause from
#     hack/setup-node.sh's), and --kube-test-repo-list points every upstream
#     registry there;
#   - ginkgo runs each suite CONFORMANCE_PROCS specs at a time (default 6),
#     each spec at most CONFORMANCE_FLAKE_ATTEMPTS times (default 1: no
#     retries).
#
# CONFORMANCE_RERUN_FROM=DIR runs again only the specs that failed on either
# kubelet in an earlier run's output DIR (the shared control plane is
# sometimes restarted by other engineers' outage tests, and specs then fail
# for that alone), and the summary merges: a rerun outcome replaces the first.
#
# Output: CONFORMANCE_OUT (default /var/tmp/seed-conformance): per kubelet
# junit.xml, ginkgo.log, kubelet.log; summary.md (also printed).
# Needs root, hack/setup-node.sh done, the control plane running
# (hack/start-control-plane.sh; this script never starts or restarts it).
# Takes about 30 minutes on 2 busy cores (see docs/conformance.md), plus the
# first build of e2e.test (10-12 minutes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
cd "$REPO_ROOT"

OUT=${CONFORMANCE_OUT:-/var/tmp/seed-conformance}
# Ginkgo label filter ("" for none; hack/storage-conformance.sh selects by name).
LABEL_FILTER=${CONFORMANCE_LABEL_FILTER-NodeConformance}
# CONFORMANCE_CSI=1 runs the CSI stand-ins (test/tools/csi) on every node and
# makes their StorageClass the default, for specs that provision volumes.
CSI=${CONFORMANCE_CSI:-0}
CSI_DRIVER=conformance.csi.seed.test
CSI_CLASS=conformance-csi
PROCS=${CONFORMANCE_PROCS:-6}
FLAKE_ATTEMPTS=${CONFORMANCE_FLAKE_ATTEMPTS:-1}
SUITE_TIMEOUT=${CONFORMANCE_TIMEOUT:-90m}
# CONFORMANCE_NAME names this run's nodes, users, containerds and webhook,
# so two runs (say, two engineers' focused reruns) never share them.
NAME=${CONFORMANCE_NAME:-conformance}
[[ $NAME =~ ^[a-z0-9-]+$ ]] || { echo "CONFORMANCE_NAME must be lower-case letters, digits and dashes" >&2; exit 1; }
STATE=/var/lib/seed-${NAME}
CTR_NAME=${NAME}
REG=localhost:5000
KUBECTL=${BIN_DIR}/kubectl
WEBHOOK_CONFIG=${NAME}-pin-pods
# Kernel settings the upstream kubelet sets when it starts; put back after.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)

# No focus by default: the whole [NodeConformance] set (the label filter),
# less the skips below.
DEFAULT_FOCUS=()
# What must not run here whatever the kubelet (CONFORMANCE_SKIP adds a
# regexp). Everything else in focus runs, and failures caused by this machine
# rather than the kubelet are classified in docs/conformance.md, not hidden.
#   - image pulls from a registry pod: it runs agnhost fake-registry-server
#     with hostNetwork on port 5000, which the shared loopback registry owns
#     (it would fail to bind; and must never stand in for the shared one).
#   - [Serial] and [Disruptive] specs: they act on the whole node or
#     cluster (this control plane is shared); [Flaky] ones upstream does
#     not run in its own conformance jobs either; [Feature:*] ones need
#     a feature or an environment outside the conformance profile
#     ([FeatureGate:*] ones, features on by default, do run).
#     CONFORMANCE_SET_SKIP replaces this regexp ('' runs them too, e.g. a
#     focused run of [Feature:UserNamespacesSupport] specs).
SET_SKIP=${CONFORMANCE_SET_SKIP-'\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:[^]]*\]'}
DEFAULT_SKIP=(
  'Container Runtime blackbox test when running a container with a new image'
)
[[ -n $SET_SKIP ]] && DEFAULT_SKIP+=("$SET_SKIP")

kc() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# ---------------------------------------------------------------- builds

build_all() {
  local tools=(e2e.test agnhost nonewprivs ginkgo) b
  [[ $CSI == 1 ]] && tools+=(csistandin)
  # The shared control plane's tools are only built when missing here: a
  # rebuild would make hack/start-control-plane.sh restart it for everyone.
  for b in kubelet-upstream kubectl; do [[ -x ${BIN_DIR}/${b} ]] || tools+=("$b"); done
  log "building ${tools[*]} (hack/build-cluster-tools.sh)"
  bash hack/build-cluster-tools.sh "${tools[@]}"
  mkdir -p "${OUT}/bin"
  log "building our kubelet (cmd/kubelet) and the helpers"
  CGO_ENABLED=0 go build -trimpath -o "${OUT}/bin/kubelet-ours" ./cmd/kubelet
  go build -o "${OUT}/bin/pinpods" ./test/conformance/pinpods
  go build -o "${OUT}/bin/junitsummary" ./test/conformance/junitsummary
  go build -o "${OUT}/bin/image-build" ./test/images/build
}

# ---------------------------------------------------------------- images

# push TAR REF: pushes unless the registry already has REF at TAR's digest.
push() {
  local tar=$1 ref=$2 digest
  digest=$("${BIN_DIR}/crane" digest --tarball "$tar")
  if [[ $("${BIN_DIR}/crane" digest --insecure "$ref" 2>/dev/null) == "$digest" ]]; then
    return
  fi
  "${BIN_DIR}/crane" push --insecure "$tar" "$ref" >/dev/null 2>"${OUT}/images/push.log" ||
    die "crane push ${ref}: $(tail -n 3 "${OUT}/images/push.log")"
  log "images: pushed ${ref} (${digest:7:12})"
}

# image NAME ROOTFS REF... [-- BUILD-FLAGS...]: builds ROOTFS into a tarball
# and pushes it under every REF.
image() {
  local name=$1 rootfs=$2 refs=() ref
  shift 2
  while (($#)) && [[ $1 != -- ]]; do refs+=("$1"); shift; done
  (($#)) && shift
  "${OUT}/bin/image-build" -rootfs "$rootfs" -o "${OUT}/images/${name}.tar" -name "${refs[0]}" "$@" >/dev/null
  for ref in "${refs[@]}"; do push "${OUT}/images/${name}.tar" "$ref"; done
}

# Stand-ins for upstream's test images, named as --kube-test-repo-list maps
# them (upstream's names and tags, registry localhost:5000).
build_images() {
  local d=${OUT}/images applet
  rm -rf "$d" && mkdir -p "$d"
  local bb=${d}/busybox-rootfs
  mkdir -p "$bb"/{bin,usr/bin,tmp,root,var,home,dev,proc,sys,etc}
  cp -r test/images/busybox/rootfs/. "$bb/"
  cp /bin/busybox "${bb}/usr/bin/busybox"
  chmod 1777 "${bb}/tmp"
  chmod 700 "${bb}/root"
  for applet in $(/bin/busybox --list) busybox; do
    ln -sf /usr/bin/busybox "${bb}/bin/${applet}"
  done
  image busybox "$bb" "${REG}/e2e-test-images/busybox:1.37.0-1" -- -cmd '["sh"]'
  # glibc-dns-testing (the hostname override specs run "hostname -f" in it):
  # busybox's hostname -f resolves through the kubelet-managed /etc/hosts too.
  image glibc-dns-testing "$bb" "${REG}/e2e-test-images/glibc-dns-testing:2.0.0" -- -cmd '["sh"]'
  # nonroot: busybox with USER 1234, as upstream's.
  image nonroot "$bb" "${REG}/e2e-test-images/nonroot:1.5" -- -cmd '["sh"]' -user 1234

  # agnhost: upstream's program on busybox (upstream's is on alpine), with
  # what its Dockerfile adds that specs rely on.
  local ag=${d}/agnhost-rootfs
  cp -a "$bb" "$ag"
  cp "${BIN_DIR}/agnhost" "${ag}/agnhost"
  ln -s agnhost "${ag}/agnhost-2"
  mkdir -p "${ag}/uploads" "${ag}/home/user-defined-in-image"
  echo "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh" >>"${ag}/etc/passwd"
  printf '%s\n' "user-defined-in-image:x:1000:" "group-defined-in-image:x:50000:user-defined-in-image" >>"${ag}/etc/group"
  # Upstream's is alpine with bash and curl, which specs call: ash stands in
  # for bash, busybox wget for a plain "curl URL".
  printf '#!/bin/sh\nexec /bin/sh "$@"\n' >"${ag}/bin/bash"
  cat >"${ag}/usr/bin/curl" <<'EOF'
#!/bin/sh
# Stand-in for curl: GETs the last http(s) URL among the arguments.
url=""
for a in "$@"; do case $a in http://* | https://*) url=$a ;; esac; done
[ -n "$url" ] || { echo "curl (stand-in): no URL in: $*" >&2; exit 2; }
exec wget -q -O - "$url"
EOF
  # hostexec pods (the storage specs' node helper) enter the host's mount
  # namespace with nsenter --mount=/rootfs/proc/1/ns/mnt, which this machine
  # denies for pid 1 (even to root on the host); the stand-in enters the same
  # namespace through a containerd process's entry instead, and runs the
  # host's /bin/sh there (busybox's nsenter would run its own sh, whose
  # built-in applets would stand in for the host's losetup, mount, ...).
  mkdir -p "${ag}/usr/local/bin"
  cat >"${ag}/usr/local/bin/nsenter" <<'EOF'
#!/bin/sh
# Stand-in for nsenter: --mount=/rootfs/proc/1/ns/mnt goes through containerd.
n=$#
prev=
while [ "$n" -gt 0 ]; do
  a=$1
  orig=$1
  shift
  if [ "$a" = "--mount=/rootfs/proc/1/ns/mnt" ]; then
    for p in /rootfs/proc/[0-9]*; do
      if [ "$(cat "$p/comm" 2>/dev/null)" = containerd ]; then a="--mount=$p/ns/mnt"; break; fi
    done
  elif [ "$prev" = "--" ] && [ "$a" = sh ]; then
    a=/bin/sh
  fi
  prev=$orig
  set -- "$@" "$a"
  n=$((n - 1))
done
exec /bin/busybox nsenter "$@"
EOF
  chmod 755 "${ag}/bin/bash" "${ag}/usr/bin/curl" "${ag}/usr/local/bin/nsenter"
  # netexec --tls-cert-file /localhost.crt (the https hook specs): upstream's
  # Dockerfile adds porter's test pair.
  local kdir
  kdir=$(cd test/tools/kubernetes && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
  cp "${kdir}/test/images/agnhost/porter/localhost.crt" "${kdir}/test/images/agnhost/porter/localhost.key" "${ag}/"
  chmod 644 "${ag}/localhost.crt" "${ag}/localhost.key"
  image agnhost "$ag" "${REG}/e2e-test-images/agnhost:2.63.0" "${REG}/e2e-test-images/agnhost:2.55" -- \
    -entrypoint '["/agnhost"]' -cmd '["pause"]'

  # nonewprivs: upstream's nnp, setuid root, prints its effective uid.
  local nn=${d}/nonewprivs-rootfs
  cp -a "$bb" "$nn"
  mkdir -p "${nn}/usr/local/bin"
  cp "${BIN_DIR}/nonewprivs" "${nn}/usr/local/bin/nnp"
  chmod 4755 "${nn}/usr/local/bin/nnp"
  image nonewprivs "$nn" "${REG}/e2e-test-images/nonewprivs:1.4" -- -cmd '["nnp"]'

  # pause: hack/setup-node.sh's, under upstream's e2e tag.
  push "${OUT_DIR}/images/pause.tar" "${REG}/pause:3.10.2"

  cat >"${OUT}/repo-list.yaml" <<EOF
promoterE2eRegistry: ${REG}/e2e-test-images
buildImageRegistry: ${REG}/build-image
invalidRegistry: ${REG}/invalid
gcEtcdRegistry: ${REG}
gcRegistry: ${REG}
sigStorageRegistry: ${REG}/sig-storage
privateRegistry: ${REG}/k8s-authenticated-test
dockerLibraryRegistry: ${REG}/library
cloudProviderGcpRegistry: ${REG}/cloud-provider-gcp
EOF
}

# ---------------------------------------------------------------- pinning

# start_webhook FLAVOR...: one webhook routing each flavor's e2e user
# (conformance-FLAVOR) to its node (conformance-FLAVOR).
start_webhook() {
  local dir=${OUT}/webhook port ca fl routes=()
  mkdir -p "$dir"
  for fl in "$@"; do routes+=(-route "${NAME}-${fl}=${NAME}-${fl}"); done
  port=$(free_port)
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=conformance-pinpods" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "${dir}/webhook.key" -out "${dir}/webhook.crt" 2>/dev/null
  start_daemon "${dir}/webhook.pid" "${dir}/webhook.log" "${OUT}/bin/pinpods" "${routes[@]}" \
    -listen "127.0.0.1:${port}" -tls-cert "${dir}/webhook.crt" -tls-key "${dir}/webhook.key"
  wait_until 10 "pinpods webhook" curl -sk "https://127.0.0.1:${port}/pin" ||
    die "pinpods did not start; log ${dir}/webhook.log"
  ca=$(base64 -w0 <"${dir}/webhook.crt")
  kc apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: ${WEBHOOK_CONFIG}
webhooks:
- name: pin.conformance.seed-kubelet.test
  clientConfig:
    url: https://127.0.0.1:${port}/pin
    caBundle: ${ca}
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]
    scope: Namespaced
  namespaceSelector:
    matchExpressions:
    - {key: e2e-framework, operator: Exists}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 5
EOF
  log "pods the e2e runs create are pinned to their nodes (webhook ${WEBHOOK_CONFIG}, log ${dir}/webhook.log)"
}

stop_webhook() {
  kc delete mutatingwebhookconfiguration "$WEBHOOK_CONFIG" --ignore-not-found >/dev/null 2>&1 || true
  if [[ -f ${OUT}/webhook/webhook.pid ]]; then stop_daemon "${OUT}/webhook/webhook.pid" pinpods >/dev/null; fi
}

# ---------------------------------------------------------------- kubelets

write_config() {
  local dir=$1 ep=$2 port=$3 healthz=$4
  # shellcheck disable=SC2154 # set by eval of make-node-credentials.sh
  cat >"${dir}/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: ${port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${healthz}
containerRuntimeEndpoint: ${ep}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
podLogsDir: ${dir}/pod-logs
nodeStatusUpdateFrequency: 4s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${CA_CERT}
authorization:
  mode: Webhook
tlsCertFile: ${SERVING_CERT}
tlsPrivateKeyFile: ${SERVING_KEY}
EOF
}
unmount_under() {
  awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
node_ready() {
  [[ $(kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

# e2e_namespaces: what the e2e framework created and has not deleted yet.
e2e_namespaces() { kc get ns -l e2e-framework -o name 2>/dev/null; }

# impersonating_kubeconfig USER OUT: the admin kubeconfig acting as USER in
# group system:masters (so the webhook can tell the runs apart).
impersonating_kubeconfig() {
  sed "/^  user:\$/a\\    as: $1\\n    as-groups: [\"system:masters\"]" "$ADMIN_KUBECONFIG" >"$2"
  grep -q "as: $1" "$2" || die "could not write ${2}"
}

STARTED=()
SAVED_SYSCTLS=()
save_sysctls() {
  local s
  for s in "${SYSCTLS[@]}"; do SAVED_SYSCTLS+=("${s}=$(cat "/proc/sys/${s}")"); done
}
restore_sysctls() {
  local kv
  for kv in "${SAVED_SYSCTLS[@]}"; do echo "${kv#*=}" >"/proc/sys/${kv%%=*}" 2>/dev/null || true; done
}

# containerd_name FLAVOR: the private containerd of that kubelet.
containerd_name() { if [[ $1 == ours ]]; then echo "$CTR_NAME"; else echo "${CTR_NAME}-$1"; fi; }

cleanup() {
  local fl node
  stop_webhook
  # Let the kubelets finish the framework's namespace deletions (their pods
  # are on them) before they go.
  if [[ -n $(e2e_namespaces) ]]; then
    kc delete ns -l e2e-framework --wait=false >/dev/null 2>&1 || true
    wait_until 180 "e2e namespaces to be deleted" bash -c "[[ -z \$('$KUBECTL' --kubeconfig '$ADMIN_KUBECONFIG' get ns -l e2e-framework -o name 2>/dev/null) ]]" ||
      log "warning: namespaces left: $(e2e_namespaces | tr '\n' ' ')"
  fi
  stop_csi
  for fl in "${STARTED[@]}"; do
    node=${NAME}-${fl}
    if [[ -f ${OUT}/${fl}/kubelet.pid ]]; then stop_daemon "${OUT}/${fl}/kubelet.pid" "kubelet ${node}"; fi
    kc delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
    # Pods still bound to the deleted node (the pod GC would take a while).
    kc get pods -A --field-selector "spec.nodeName=${node}" --no-headers \
      -o custom-columns=NS:.metadata.namespace,N:.metadata.name 2>/dev/null |
      while read -r ns n; do kc -n "$ns" delete pod "$n" --grace-period=0 --force >/dev/null 2>&1 || true; done
    bash hack/private-containerd.sh "$(containerd_name "$fl")" stop >/dev/null 2>&1 || true
    unmount_under "${STATE}/${node}"
  done
  STARTED=()
  restore_sysctls
}

# start_kubelet FLAVOR BINARY: its own containerd, node conformance-FLAVOR.
start_kubelet() {
  local fl=$1 bin=$2 node=${NAME}-$1 dir=${OUT}/$1 ep port healthz t0
  rm -rf "$dir" && mkdir -p "${dir}/pod-logs"
  unmount_under "${STATE}/${node}"
  rm -rf "${STATE:?}/${node}" && mkdir -p "${STATE}/${node}"
  STARTED+=("$fl")
  ep=$(bash hack/private-containerd.sh "$(containerd_name "$fl")")
  echo "$ep" >"${dir}/endpoint"
  # Its image store outlives it: drop test images a previous run pulled, so
  # that this run's stand-ins are used (specs pull IfNotPresent).
  ctr --address "${ep#unix://}" -n k8s.io images ls -q | grep "^${REG}/" |
    xargs -r ctr --address "${ep#unix://}" -n k8s.io images rm >/dev/null || true
  eval "$(bash hack/make-node-credentials.sh "$node")"
  # The node's serving certificate for NODE_IP too (the apiserver dials the
  # InternalIP and checks the certificate against the cluster CA).
  SERVING_CERT=${STATE}/${node}-pki/kubelet.crt SERVING_KEY=${STATE}/${node}-pki/kubelet.key
  lock_pki
  issue_cert kubelet "${STATE}/${node}-pki" "/CN=${node}" server "DNS:${node}" "IP:${NODE_IP}" "IP:127.0.0.1"
  unlock_pki
  port=$(free_port)
  healthz=$(free_port)
  write_config "$dir" "$ep" "$port" "$healthz"
  impersonating_kubeconfig "${NAME}-${fl}" "${dir}/e2e.kubeconfig"
  kc delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
  log "${fl}: starting ${bin} as node ${node} on ${ep} (log ${dir}/kubelet.log)"
  start_daemon "${dir}/kubelet.pid" "${dir}/kubelet.log" "$bin" --config "${dir}/config.yaml" \
    --root-dir "${STATE}/${node}" --cert-dir "${STATE}/${node}/pki" --kubeconfig "$KUBECONFIG" \
    --hostname-override "$node" --node-ip "$NODE_IP" --v 2
  t0=$(now_ms)
  wait_until 60 "node ${node} Ready" node_ready "$node" || {
    tail -n 30 "${dir}/kubelet.log" >&2
    die "${fl}: node ${node} did not become Ready"
  }
  log "${fl}: node Ready after $(($(now_ms) - t0))ms"
}

# run_e2e FLAVOR: upstream's specs against that kubelet; exit code of ginkgo.
run_e2e() {
  local fl=$1 dir=${OUT}/$1 node=${NAME}-$1 focus=("${DEFAULT_FOCUS[@]}") skip=("${DEFAULT_SKIP[@]}") f args=()
  [[ -n ${CONFORMANCE_FOCUS:-} ]] && mapfile -t focus <<<"$CONFORMANCE_FOCUS"
  [[ -n ${CONFORMANCE_SKIP:-} ]] && skip+=("$CONFORMANCE_SKIP")
  if [[ -n ${RERUN_FOCUS_FILE:-} ]]; then
    # The failed specs' texts, regexp-quoted.
    mapfile -t focus < <(sed -e 's/[][\.*^$()+?{}|]/\\&/g' "$RERUN_FOCUS_FILE")
  fi
  for f in "${focus[@]}"; do args+=(--focus "$f"); done
  for f in "${skip[@]}"; do args+=(--skip "$f"); done
  [[ -n ${LABEL_FILTER} ]] && args+=(--label-filter "$LABEL_FILTER")
  "${BIN_DIR}/ginkgo" --procs "$PROCS" "${args[@]}" \
    --flake-attempts "$FLAKE_ATTEMPTS" --timeout "$SUITE_TIMEOUT" --no-color --junit-report junit.xml \
    --json-report report.json --output-dir "$dir" --silence-skips \
    "${BIN_DIR}/e2e.test" -- \
    --kubeconfig "${dir}/e2e.kubeconfig" --kubectl-path "$KUBECTL" \
    --kube-test-repo-list "${OUT}/repo-list.yaml" \
    --allowed-not-ready-nodes=-1 --minStartupPods=-1 \
    --container-runtime-endpoint "$(<"${dir}/endpoint")" --kubelet-root-dir "${STATE}/${node}" \
    --node-os-distro debian --disable-log-dump \
    >"${dir}/ginkgo.log" 2>&1
}

# ---------------------------------------------------------------- CSI

# start_csi FLAVOR...: the stand-in host-path driver with its registrar on
# each node (one data directory: the nodes share this machine, so every
# volume is reachable from both and the driver reports no topology), one
# provisioner, the CSIDriver and a default StorageClass.
start_csi() {
  local fl node dir sock
  mkdir -p "${OUT}/csi" "${STATE}/csi-data"
  for fl in "$@"; do
    node=conformance-${fl}
    dir=${OUT}/csi/${fl}
    sock=${STATE}/${node}-csi/csi.sock
    mkdir -p "$dir"
    start_daemon "${dir}/driver.pid" "${dir}/driver.log" "${BIN_DIR}/csistandin" driver --endpoint "$sock" \
      --nodeid "$node" --drivername "$CSI_DRIVER" --datadir "${STATE}/csi-data" --no-topology
    wait_until 20 "CSI driver socket ${sock}" test -S "$sock" || die "CSI driver did not start; log ${dir}/driver.log"
    start_daemon "${dir}/registrar.pid" "${dir}/registrar.log" "${BIN_DIR}/csistandin" registrar --csi-address "$sock" \
      --registration-dir "${STATE}/${node}/plugins_registry"
  done
  kc apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ${CSI_DRIVER}
spec:
  attachRequired: false
  podInfoOnMount: true
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent, Ephemeral]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: ${CSI_CLASS}
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: ${CSI_DRIVER}
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
  start_daemon "${OUT}/csi/provisioner.pid" "${OUT}/csi/provisioner.log" "${BIN_DIR}/csistandin" provisioner \
    --kubeconfig "$ADMIN_KUBECONFIG" --csi-address "${STATE}/conformance-${1}-csi/csi.sock"
  log "CSI stand-ins on $(printf 'conformance-%s ' "$@")(driver ${CSI_DRIVER}, default StorageClass ${CSI_CLASS})"
}

stop_csi() {
  [[ $CSI == 1 && -d ${OUT}/csi ]] || return 0
  kc delete storageclass "$CSI_CLASS" --ignore-not-found >/dev/null 2>&1 || true
  local pid
  for pid in "${OUT}"/csi/*.pid "${OUT}"/csi/*/*.pid; do
    [[ -f $pid ]] && stop_daemon "$pid" "csi $(basename "$pid" .pid)" >/dev/null
  done
  kc delete csidriver "$CSI_DRIVER" --ignore-not-found >/dev/null 2>&1 || true
  unmount_under "${STATE}/csi-data"
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root"
  local which=${1:-both} flavors=()
  case $which in
  ours) flavors=(ours) ;;
  upstream) flavors=(upstream) ;;
  both) flavors=(ours upstream) ;;
  *) die "usage: $0 [ours|upstream|both]" ;;
  esac
  mkdir -p "$OUT" "$STATE"
  # The node IP both kubelets report and listen on: upstream refuses a
  # loopback one ("nodeIP can't be loopback address": the Node would have no
  # address and the apiserver could not reach it for logs and exec), so the
  # CNI bridge's address, which is this machine's too.
  NODE_IP=$(ip -4 -o addr show dev cni0 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
  [[ -n $NODE_IP ]] || die "no IPv4 address on the CNI bridge cni0 (run a pod once, e.g. hack/setup-node.sh and any integration test)"
  local t0
  t0=$(now_ms)
  if ! containerd_answers || ! "${BIN_DIR}/crane" catalog "$REGISTRY_ADDR" --insecure >/dev/null 2>&1 ||
    [[ ! -f ${OUT_DIR}/images/pause.tar ]]; then
    log "node not prepared: running hack/setup-node.sh"
    bash hack/setup-node.sh
  fi
  build_all
  # The control plane is shared: never (re)start it from here. Another
  # engineer's outage test may have it down for a minute; wait for them.
  wait_until 180 "the control plane at ${APISERVER_URL} (start it with hack/start-control-plane.sh)" \
    curl -sfk --max-time 3 "${APISERVER_URL}/readyz" || die "the control plane does not answer"
  build_images
  local from=${CONFORMANCE_RERUN_FROM:-} f reports_from=() fl0
  if [[ -n $from ]]; then
    for fl0 in "${flavors[@]}"; do reports_from+=("${fl0}=${from}/${fl0}/junit.xml"); done
    [[ $(readlink -f "$from") != $(readlink -f "$OUT") ]] || die "CONFORMANCE_RERUN_FROM must differ from CONFORMANCE_OUT"
    RERUN_FOCUS_FILE=${OUT}/rerun-specs.txt
    "${OUT}/bin/junitsummary" -failed "${reports_from[@]}" >"$RERUN_FOCUS_FILE"
    log "rerunning the $(wc -l <"$RERUN_FOCUS_FILE") specs that failed in ${from} (list: ${RERUN_FOCUS_FILE})"
    [[ -s $RERUN_FOCUS_FILE ]] || { log "nothing failed there"; return 0; }
  fi
  # A run killed half-way may have left its webhook configuration behind.
  kc delete mutatingwebhookconfiguration "$WEBHOOK_CONFIG" --ignore-not-found >/dev/null

  trap cleanup EXIT
  save_sysctls
  local fl bin
  for fl in "${flavors[@]}"; do
    bin=${OUT}/bin/kubelet-ours
    [[ $fl == upstream ]] && bin=${BIN_DIR}/kubelet-upstream
    start_kubelet "$fl" "$bin"
  done
  start_webhook "${flavors[@]}"
  [[ $CSI == 1 ]] && start_csi "${flavors[@]}"

  # The runs go side by side, each against its own kubelet.
  local pids=() reports=() i rc
  t0=$(now_ms)
  for fl in "${flavors[@]}"; do
    log "${fl}: running e2e.test (${PROCS} specs at a time; log ${OUT}/${fl}/ginkgo.log)"
    run_e2e "$fl" &
    pids+=($!)
  done
  for i in "${!flavors[@]}"; do
    fl=${flavors[$i]}
    rc=0
    wait "${pids[$i]}" || rc=$?
    log "${fl}: e2e.test exited ${rc} after $((($(now_ms) - t0) / 1000))s: $(grep -E '^Ran [0-9]+ of' "${OUT}/${fl}/ginkgo.log" | tail -1)"
    if [[ -n $from ]]; then
      reports+=("${fl}=${from}/${fl}/junit.xml,${OUT}/${fl}/junit.xml")
    else
      reports+=("${fl}=${OUT}/${fl}/junit.xml")
    fi
  done
  cleanup
  "${OUT}/bin/junitsummary" "${reports[@]}" | tee "${OUT}/summary.md"
  log "done in $((($(now_ms) - t0) / 1000))s; results in ${OUT}"
}

main "$@"
