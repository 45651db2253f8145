// Package imageref owns what the kubelet reads from an image reference
// without a registry: the fully qualified repository the runtime resolves it
// to (Docker Hub's defaults applied). Pure functions, matching
// github.com/distribution/reference's normalization.
package imageref
