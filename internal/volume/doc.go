// Package volume owns a pod's volumes on disk (emptyDir, hostPath, configMap,
// secret, downwardAPI, projected) under <root>/pods/<uid>/volumes and turns a
// container's volumeMounts into CRI mounts.
// Invariants: API-backed contents are only ever published through the atomic
// writer (timestamped dir + ..data symlink), so readers never see half an update;
// a volume once set up stays set up (its source going away never unmounts it);
// with an fsGroup every volume but hostPath belongs to that group (setgid dirs).
package volume
