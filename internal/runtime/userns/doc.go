// Package userns owns the user namespaces of pods with hostUsers: false
// (upstream's userns manager): each such pod gets a range of IDsPerPod
// host IDs (65536 by default) out of the kubelet's range (the subordinate
// IDs of the "kubelet" user, or every ID from IDsPerPod up), mapped to IDs
// 0..IDsPerPod-1 in the pod; the range is kept in the pod's directory
// ("userns", upstream's file and format) so a restarted kubelet gives it
// back to the same pod. A runtime (handler) that does not report
// user-namespace support in its CRI status gets upstream's error.
//
// Invariants: no two pods share a range; a range never includes host ID
// 0; a pod's range is released only when its directory goes.
package userns
