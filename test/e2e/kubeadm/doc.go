// Package kubeadm proves that our kubelet is a drop-in for the one kubeadm
// v1.36.3 sets up: `kubeadm init` on this machine with our kubelet started
// as kubeadm's systemd unit starts it, running the control plane as static
// pods from images built here, then `kubeadm join` of a second kubelet of
// ours through TLS bootstrap. The cluster has its own ports, so it runs
// beside the shared test control plane; it uses /etc/kubernetes and
// /var/lib/kubelet (kubeadm's fixed paths; anything there is moved aside
// and put back). Needs root and `hack/build-cluster-tools.sh kubeadm`.
//
//	go test -tags e2e -count=1 ./test/e2e/kubeadm/
//
// rotation_test.go (build tag rotation, hack/rotation-e2e.sh) watches the
// kubelet rotate its client certificate under a short signing duration.
package kubeadm
