// Package containerd2 pins containerd 2.x, built by hack/setup-containerd2.sh
// so tests also run against a runtime with the CRI container event stream
// (Debian's containerd 1.6 answers GetContainerEvents with Unimplemented).
package containerd2
