#!/usr/bin/env bash
# Client certificate rotation, end to end (test/e2e/kubeadm/rotation_test.go):
# `kubeadm init` of a control plane whose kube-controller-manager signs
# short-lived certificates (--cluster-signing-duration, default 3m: set
# ROTATION_SIGNING_DURATION=10m for the API's smallest CSR lifetime), run by
# our kubelet, which must renew its client certificate twice inside
# upstream's 70-90 % window without the Node losing Ready, a gap in its
# Lease or a container restart. It waits for real time to pass: about 5
# minutes with 3m (about 20 with 10m), so it is not part of hack/test.sh.
# The schedule itself is unit-tested on a fake clock in internal/certificate.
#
# Needs root, hack/setup-node.sh and the cluster tools; takes the e2e lock
# (the kubeadm cluster has its own ports, but it uses /etc/kubernetes and
# /var/lib/kubelet). CONTAINER_RUNTIME_ENDPOINT picks the runtime, as for
# the other e2e tests.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

[[ $(id -u) == 0 ]] || die "run as root"
flock /tmp/seed-tools.lock bash hack/build-cluster-tools.sh kubeadm kubectl
exec flock /tmp/seed-e2e.lock go test -tags "e2e rotation" -count=1 -timeout 30m -v \
  -run TestKubeadmClientCertificateRotation ./test/e2e/kubeadm/
