# shellcheck shell=bash disable=SC2034 # variables for the sourcing scripts
# Paths and PKI helpers shared by hack/start-control-plane.sh,
# hack/stop-control-plane.sh and hack/make-node-credentials.sh. Source it
# after lib/common.sh.
#
# Layout (root-owned, outside the repo so that it survives `git clean`):
#   /var/lib/seed-kubelet/pki/            cluster CA, apiserver serving cert,
#                                         service-account keys, client certs;
#                                         front-proxy CA and the apiserver's
#                                         front-proxy client cert (aggregation
#                                         layer, as kubeadm lays it out)
#   /var/lib/seed-kubelet/kubeconfig/     controller-manager and scheduler
#   /var/lib/seed-kubelet/nodes/NODE/     per-node kubeconfig, client and
#                                         serving certs (make-node-credentials.sh)
#   /var/lib/seed-kubelet/etcd/           etcd's data
#   _output/admin.kubeconfig              cluster-admin (O=system:masters)
#   /var/log/seed-{etcd,kube-apiserver,kube-controller-manager,kube-scheduler}.log
#   /run/seed-kubelet/*.pid               pidfiles
#
# A separate control plane (for a test that stops its apiserver, or needs
# other flags, while others use the shared one) is named by SEED_CP and
# listens on the ports it is given:
#   SEED_CP=NAME APISERVER_PORT=P ETCD_CLIENT_PORT=P ETCD_PEER_PORT=P \
#     CONTROLLER_MANAGER_PORT=P SCHEDULER_PORT=P hack/start-control-plane.sh
# (the same variables for hack/stop-control-plane.sh and
# hack/make-node-credentials.sh). It shares the PKI above (the CA, the
# apiserver's certificate for 127.0.0.1, the service-account keys, the
# client certificates) and has its own etcd data, kubeconfigs, node
# credentials and admin kubeconfig under /var/lib/seed-kubelet/cp-NAME/,
# pidfiles /run/seed-kubelet/NAME-*.pid and logs /var/log/seed-NAME-*.log.

CP_STATE_DIR=/var/lib/seed-kubelet
PKI_DIR=${CP_STATE_DIR}/pki
SEED_CP=${SEED_CP:-}
APISERVER_PORT=${APISERVER_PORT:-6443}
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
CONTROLLER_MANAGER_PORT=${CONTROLLER_MANAGER_PORT:-10257}
SCHEDULER_PORT=${SCHEDULER_PORT:-10259}
if [[ -z $SEED_CP ]]; then
  CP_DIR=${CP_STATE_DIR}
  ADMIN_KUBECONFIG=${OUT_DIR}/admin.kubeconfig
  CP_PREFIX=""
else
  [[ $SEED_CP =~ ^[a-z0-9-]+$ ]] || die "SEED_CP must be lower-case letters, digits and dashes"
  for _port in "$APISERVER_PORT:6443" "$ETCD_CLIENT_PORT:2379" "$ETCD_PEER_PORT:2380" \
    "$CONTROLLER_MANAGER_PORT:10257" "$SCHEDULER_PORT:10259"; do
    [[ ${_port%%:*} != "${_port##*:}" ]] ||
      die "control plane ${SEED_CP}: give it its own ports (APISERVER_PORT, ETCD_CLIENT_PORT, ETCD_PEER_PORT, CONTROLLER_MANAGER_PORT, SCHEDULER_PORT)"
  done
  CP_DIR=${CP_STATE_DIR}/cp-${SEED_CP}
  ADMIN_KUBECONFIG=${CP_DIR}/admin.kubeconfig
  CP_PREFIX=${SEED_CP}-
fi
KUBECONFIG_DIR=${CP_DIR}/kubeconfig
NODES_DIR=${CP_DIR}/nodes
ETCD_DATA_DIR=${CP_DIR}/etcd
# Where the PKI check of this control plane is recorded (see pki_fresh).
PKI_STAMP=${PKI_DIR}/.checked${SEED_CP:+-${SEED_CP}}
# pidfile NAME / logfile NAME: where this control plane's component NAME
# records its pid and writes its log.
pidfile() { echo "${RUN_DIR}/${CP_PREFIX}$1.pid"; }
logfile() { echo "/var/log/seed-${CP_PREFIX}$1.log"; }

APISERVER_URL=https://127.0.0.1:${APISERVER_PORT}
ETCD_CLIENT_URL=http://127.0.0.1:${ETCD_CLIENT_PORT}
ETCD_PEER_URL=http://127.0.0.1:${ETCD_PEER_PORT}
SERVICE_CIDR=10.0.0.0/24
SERVICE_ACCOUNT_ISSUER=https://kubernetes.default.svc.cluster.local

PKI_LOCK=${CP_STATE_DIR}/.pki.lock
PKI_CHANGED=no
CERT_DAYS=365
CA_DAYS=3650

# ensure_tools: openssl (the PKI) and curl (health checks), from Debian when
# missing.
ensure_tools() {
  local missing=()
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  ((${#missing[@]})) || return 0
  log "packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# new_key PATH: an ECDSA P-256 private key (quick to make, accepted by every
# component), written atomically with mode 0600.
new_key() {
  local path=$1
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "${path}.tmp" 2>/dev/null) ||
    die "openssl: could not create ${path}"
  mv -f "${path}.tmp" "$path" || die "could not write ${path}"
}

# issue_cert NAME DIR SUBJECT KIND [SAN...]: DIR/NAME.key and DIR/NAME.crt,
# signed by the cluster CA (or, with ISSUER=NAME in the environment, by the
# CA PKI_DIR/NAME.crt, e.g. ISSUER=front-proxy-ca). KIND is client, server or
# both; SANs are "DNS:name" or "IP:addr". Replaces a certificate that is
# missing, not signed by the current CA, expiring within a day, or issued for
# another subject or other SANs. Sets PKI_CHANGED=yes when it wrote a
# certificate.
issue_cert() {
  local name=$1 dir=$2 subject=$3 kind=$4
  shift 4
  local key=${dir}/${name}.key crt=${dir}/${name}.crt eku san="" ext tmp ca=${PKI_DIR}/${ISSUER:-ca}
  case $kind in
  client) eku=clientAuth ;;
  server) eku=serverAuth ;;
  both) eku=serverAuth,clientAuth ;;
  *) die "issue_cert: unknown kind ${kind}" ;;
  esac
  if (($#)); then
    san=$(IFS=,; echo "$*")
  fi
  if [[ -f $key && -f $crt ]] && cert_matches "$crt" "$subject" "$san" "$key"; then
    return 0
  fi
  mkdir -p "$dir"
  new_key "$key"
  ext=$(mktemp)
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=${eku}"
    echo "subjectKeyIdentifier=hash"
    echo "authorityKeyIdentifier=keyid"
    [[ -z $san ]] || echo "subjectAltName=${san}"
  } >"$ext"
  tmp=${crt}.tmp
  openssl req -new -key "$key" -subj "$subject" 2>/dev/null |
    openssl x509 -req -CA "${ca}.crt" -CAkey "${ca}.key" \
      -set_serial "0x$(openssl rand -hex 16)" -days "$CERT_DAYS" -extfile "$ext" -out "$tmp" 2>/dev/null ||
    { rm -f "$ext" "$tmp"; die "openssl: could not issue ${crt}"; }
  rm -f "$ext"
  mv -f "$tmp" "$crt" || die "could not write ${crt}"
  PKI_CHANGED=yes
}

# cert_matches CRT SUBJECT SANS KEY: CRT is for SUBJECT and exactly SANS
# (comma-separated "DNS:x"/"IP:y"), belongs to KEY, chains to the current
# CA (PKI_DIR/${ISSUER:-ca}.crt) and is valid for at least another day.
cert_matches() {
  local crt=$1 subject=$2 san=$3 key=$4 got want
  openssl verify -CAfile "${PKI_DIR}/${ISSUER:-ca}.crt" "$crt" >/dev/null 2>&1 || return 1
  openssl x509 -in "$crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  [[ $(openssl x509 -in "$crt" -noout -pubkey) == $(openssl pkey -in "$key" -pubout 2>/dev/null) ]] || return 1
  got=$(openssl x509 -in "$crt" -noout -subject -nameopt RFC2253 | sed 's/^subject=//')
  want=$(subject_rfc2253 "$subject")
  [[ $got == "$want" ]] || return 1
  got=$(openssl x509 -in "$crt" -noout -ext subjectAltName 2>/dev/null | sed -n '2p' |
    sed -e 's/IP Address:/IP:/g' -e 's/ //g' | tr ',' '\n' | sort | paste -sd, -)
  want=$(tr ',' '\n' <<<"$san" | sed '/^$/d' | sort | paste -sd, -)
  [[ $got == "$want" ]]
}

# subject_rfc2253 /O=a/CN=b prints CN=b,O=a (openssl's RFC 2253 order is the
# reverse of the -subj order).
subject_rfc2253() {
  tr '/' '\n' <<<"${1#/}" | tac | paste -sd, -
}

# ensure_ca [NAME CN]: the CA PKI_DIR/NAME.{crt,key} (default: the cluster
# CA, ca, CN seed-kubelet-ca). Sets PKI_CHANGED=yes when it made a new one
# (every certificate signed by the old one is then reissued on demand, see
# issue_cert).
ensure_ca() {
  local ca=${PKI_DIR}/${1:-ca} cn=${2:-seed-kubelet-ca}
  mkdir -p "$PKI_DIR"
  chmod 700 "$PKI_DIR"
  if [[ -f ${ca}.key && -f ${ca}.crt ]] &&
    openssl x509 -in "${ca}.crt" -noout -checkend 86400 >/dev/null 2>&1; then
    return 0
  fi
  new_key "${ca}.key"
  openssl req -x509 -new -key "${ca}.key" -subj "/CN=${cn}" -days "$CA_DAYS" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
    -out "${ca}.crt.tmp" 2>/dev/null || die "openssl: could not create the CA ${cn}"
  mv -f "${ca}.crt.tmp" "${ca}.crt" || die "could not write ${ca}.crt"
  PKI_CHANGED=yes
}

# write_kubeconfig PATH USER CERT KEY: a kubeconfig for APISERVER_URL with
# the CA and the client certificate embedded.
write_kubeconfig() {
  local path=$1 user=$2 cert=$3 key=$4
  mkdir -p "$(dirname "$path")"
  (umask 077 && cat >"${path}.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: seed-kubelet
  cluster:
    server: ${APISERVER_URL}
    certificate-authority-data: $(base64 -w0 <"${PKI_DIR}/ca.crt")
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 <"$cert")
    client-key-data: $(base64 -w0 <"$key")
contexts:
- name: ${user}@seed-kubelet
  context:
    cluster: seed-kubelet
    user: ${user}
current-context: ${user}@seed-kubelet
EOF
  ) || die "could not write ${path}"
  mv -f "${path}.tmp" "$path" || die "could not write ${path}"
}

# kubeconfig_current PATH CERT: PATH exists and embeds CERT and the current CA.
kubeconfig_current() {
  local path=$1 cert=$2
  [[ -f $path ]] &&
    grep -qF "client-certificate-data: $(base64 -w0 <"$cert")" "$path" &&
    grep -qF "certificate-authority-data: $(base64 -w0 <"${PKI_DIR}/ca.crt")" "$path"
}

# pki_fresh STAMP FILE...: a previous run checked FILE... (every
# certificate, key and kubeconfig involved) and recorded it in STAMP; none of
# them changed or went missing since, the CA did not change, the scripts that
# made them did not change, and the check is less than a day old (expiry).
# Spares the dozens of openssl runs of a full check.
pki_fresh() {
  local stamp=$1 f
  shift
  [[ -f $stamp && $(<"$stamp") == "$(pki_spec)" ]] || return 1
  [[ -z $(find "$stamp" -mmin +1440) ]] || return 1
  for f in "$@" "${PKI_DIR}/ca.crt" "${PKI_DIR}/ca.key"; do
    [[ -f $f && ! $f -nt $stamp ]] || return 1
  done
}

# pki_stamp STAMP: records that the files passed to pki_fresh are current.
pki_stamp() {
  pki_spec >"$1"
}

pki_spec() {
  cat "${BASH_SOURCE[0]}" "$0" | sha256sum | cut -d' ' -f1
}

# lock_pki / unlock_pki: hold the PKI lock (fd 9) so that concurrent callers
# (tests in parallel, or a test and start-control-plane.sh) never see
# half-written files. The lock goes with the process.
lock_pki() {
  mkdir -p "$CP_STATE_DIR"
  exec 9>"$PKI_LOCK"
  flock -w 120 9 || die "timed out waiting for ${PKI_LOCK}"
}
unlock_pki() {
  exec 9>&-
}
