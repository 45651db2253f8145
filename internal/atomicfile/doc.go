// Package atomicfile writes files whole: readers, and a kubelet restarted
// after a crash, see the old content or the new one, never half of one
// (certificates, checkpoints, a pod's user namespace record).
package atomicfile
