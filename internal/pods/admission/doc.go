// Package admission owns the node-side checks made before a pod may start
// (upstream's predicate admit handler): OS, resources, node selector and
// affinity, node name, host ports and NoExecute taints, the sysctl
// allowlist (the safe set plus allowedUnsafeSysctls) and the node's
// declared features (KEP-5328); the Admitter chains
// them after the eviction manager's pressure check, in upstream's order.
// Invariants: every check is pure over its inputs and never mutates them;
// the caller passes only active (admitted, not terminated) pods.
package admission
