// Package allocation owns the resources the kubelet has allocated to each
// pod (upstream's allocation manager): what admission accepted, and, for
// an in-place resize (pods/resize), whether the new resources fit the node
// now (allocated), later (Deferred) or never (Infeasible); with the
// PodResizePending and PodResizeInProgress conditions and their events.
// State keeps a per-pod record of resources in a checkpoint file of
// upstream's format, for the allocated resources (allocated_pods_state)
// and, in the runtime manager's hands, the actuated ones
// (actuated_pods_state), so a kubelet restart loses neither.
//
// Invariants: a pod runs with its allocated resources, never with spec
// resources the node has not accepted; the decisions (Allocate,
// ResizeRequested, Feasible) are pure functions of the pods given.
package allocation
