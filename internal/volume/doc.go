// Package volume owns a pod's volumes on disk (emptyDir, hostPath, configMap,
// secret, downwardAPI, projected) under <root>/pods/<uid>/volumes and turns a
// container's volumeMounts into CRI mounts.
// Invariants: API-backed contents are only ever published through the atomic
// writer (timestamped dir + ..data symlink), so readers never see half an update.
package volume
