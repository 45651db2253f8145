// Package evictionapi owns the eviction signals and the parsing of the
// eviction settings (evictionHard/Soft/SoftGracePeriod/MinimumReclaim) into
// thresholds, for the three places that read them: options validation, the
// eviction manager and node allocatable.
// Invariants: parsing is pure; a percentage is a float32 fraction and its
// amount int64(float64(capacity) * float64(fraction)), as upstream computes.
package evictionapi
