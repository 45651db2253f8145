// Package credentialprovider owns where image pull credentials come from
// besides a pod's pull secrets: the keyring matching registry locations to
// repositories (shared with the pull secrets), the node's docker config,
// and the exec credential provider plugins (credentialprovider.kubelet.k8s.io,
// --image-credential-provider-config and -bin-dir) with upstream's caching
// by cacheKeyType and cacheDuration and the service account token mode.
// Invariants: matching follows upstream's URLsMatch; a plugin runs only for
// an image its matchImages match, at most once at a time per image, and not
// while a cached answer is fresh; a failing plugin never fails a lookup, it
// only leaves its credentials out and is named in the error.
package credentialprovider
