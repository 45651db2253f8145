// Package atomicfile owns replacing a file whole: readers (and a kubelet
// restarted after a crash) see the old content or the new, never half.
// Invariant: data reaches the disk (fsync) before the rename makes it visible.
package atomicfile
