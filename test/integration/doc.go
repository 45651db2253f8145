// Package integration holds tests against the real parts of a node
// (containerd over the CRI, CNI, the loopback registry). They need root and
// `bash hack/setup-node.sh`; run them with `go test -tags integration`.
package integration
