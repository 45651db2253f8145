// Package runtimeclass resolves a pod's runtimeClassName to the CRI runtime
// handler its sandbox runs with (RunPodSandbox runtime_handler), through the
// node.k8s.io/v1 RuntimeClass API, as upstream's runtimeclass manager: a
// watch-fed cache of every RuntimeClass.
//
// Invariants: no class (nil or "") is the runtime's default handler ""; an
// unknown class is upstream's NotFound error (`runtimeclass.node.k8s.io "x"
// not found`); until the cache has synced a lookup reads the API server
// directly rather than answer NotFound from an empty cache.
package runtimeclass
