// Package framework holds helpers for the integration tests that run against
// the real node set up by hack/setup-node.sh: a CRI client for containerd,
// the names of the images and registry that script provides, and cleanup
// helpers that remove what a test created even when it fails.
package framework
