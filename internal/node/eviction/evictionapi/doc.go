// Package evictionapi owns the eviction signals and the parsing of the
// eviction settings (evictionHard/Soft/SoftGracePeriod/MinimumReclaim) into
// thresholds, for the three places that read them: options validation, the
// eviction manager and node allocatable.
// Upstream's parser is in k8s.io/kubernetes (pkg/kubelet/eviction), which
// this module must not require, so it is written here to its semantics.
// Invariants: parsing is pure; a percentage is a float32 fraction and its
// amount int64(float64(capacity) * float64(fraction)), as upstream computes.
package evictionapi
