// Package mountpoint answers whether a path is a mount point from the mount
// table of the kubelet's mount namespace (read through hostinfo, which uses
// github.com/moby/sys/mountinfo), the one authority on what is mounted: a
// bind mount of a directory on the same filesystem shares its device, so
// stat cannot tell it from a plain directory, and a stale mount of a crashed
// driver cannot be stat'ed at all.
package mountpoint
