// Package volume owns a pod's volumes under <root>/pods/<uid> (emptyDir,
// hostPath, configMap, secret, downwardAPI, projected), its containers' CRI
// mounts and the removal of the pod directory. Invariants: API data is
// published only by the atomic writer and, but for configMaps, on a tmpfs;
// a subPath reaches the runtime only as a bind mount of the inode opened
// without following symlinks (subpath.go); nothing is removed through a mount
// or across filesystems (poddir.go); the mount table is read in mountinfo.go
// only; a volume once set up stays set up; fsGroup owns all but hostPath.
package volume
