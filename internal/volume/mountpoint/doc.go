// Package mountpoint reads the mount table of the kubelet's mount namespace
// (/proc/self/mountinfo), the one authority on what is mounted: a bind mount
// of a directory on the same filesystem shares its device, so stat cannot
// tell it from a plain directory.
package mountpoint
