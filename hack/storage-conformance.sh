#!/usr/bin/env bash
# Runs upstream's storage e2e specs (k8s.io/kubernetes v1.36.3 test/e2e) that
# need only a node and what this machine can give, against our kubelet and
# the upstream kubelet side by side, with hack/conformance.sh's machinery
# (private containerds, pinned pods, stand-in images); docs/storage-conformance.md
# discusses a run.
#
#   hack/storage-conformance.sh [ours|upstream|both]      (default both)
#
# Every node also runs the CSI stand-ins (test/tools/csi: host-path driver and
# registrar; one provisioner) with a default StorageClass, so specs that
# provision a claim of the default class get one. The focus is:
#   - PersistentVolumes-local (local PVs of every volume type the spec makes)
#   - In-tree Volumes [Driver: hostPath] and [Driver: local] (dir, block):
#     the storage test suites (volumes, subPath, volumeMode, multiVolume, ...)
#     over inline, pre-provisioned and local volumes
#   - PVC Protection, Ephemeralstorage, Subpath
# without [Slow], [Serial], [Disruptive] and feature-gated specs. What cannot
# run here (the CSI host-path driver's and mock driver's images, NFS/iSCSI
# servers, cloud disks) is listed in docs/storage-conformance.md.
#
# Output: STORAGE_CONFORMANCE_OUT (default /var/tmp/seed-storage-conformance):
# <flavor>-run/ per kubelet, summary.md for both. Takes about 15 minutes on
# this machine; hold the e2e lock (flock /tmp/seed-e2e.lock) while it runs:
# it makes its StorageClass the default.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CONFORMANCE_OUT=${STORAGE_CONFORMANCE_OUT:-/var/tmp/seed-storage-conformance}
export CONFORMANCE_LABEL_FILTER=""
export CONFORMANCE_CSI=1
export CONFORMANCE_FOCUS='\[sig-storage\] PersistentVolumes-local 
\[sig-storage\] In-tree Volumes \[Driver: hostPath\] 
\[sig-storage\] In-tree Volumes \[Driver: local\] \[LocalVolumeType: (dir|block)\] 
\[sig-storage\] PVC Protection 
\[sig-storage\] Ephemeralstorage 
\[sig-storage\] Subpath '
export CONFORMANCE_SKIP='\[Slow\]|\[Serial\]|\[Disruptive\]|\[Feature:|\[Flaky\]|FeatureGate:'
# One kubelet at a time: the local-volume specs put their volume on "a
# random ready node", which with both nodes up is the other run's half the
# time (its PV then pins the pod away from the node the run's pods are
# pinned to).
base=$CONFORMANCE_OUT
flavors=(ours upstream)
case ${1:-both} in
ours | upstream) flavors=("$1") ;;
both) ;;
*) echo "usage: $0 [ours|upstream|both]" >&2; exit 2 ;;
esac
reports=()
for fl in "${flavors[@]}"; do
  CONFORMANCE_OUT=${base}/${fl}-run bash hack/conformance.sh "$fl"
  reports+=("${fl}=${base}/${fl}-run/${fl}/junit.xml")
done
"${base}/${flavors[0]}-run/bin/junitsummary" "${reports[@]}" | tee "${base}/summary.md"
