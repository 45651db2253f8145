// Package kuberuntime owns what the kubelet does to a pod on a CRI runtime.
// ComputePodActions decides, as a pure function of the pod spec and the
// runtime's view of the pod, what must change; Manager carries the actions
// out through the CRI (sandbox, images, containers) and reads pod status back.
//
// Invariants: the runtime is the only source of truth about what runs; the
// manager keeps no per-pod state except back-off timers, so a restarted
// kubelet adopts running pods from their CRI labels alone.
package kuberuntime
