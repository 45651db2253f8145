// Package podutil owns the small facts about a pod that many parts of the
// kubelet ask: where it came from (static, mirror), whether it is critical,
// which init containers are sidecars, and $(VAR) expansion in commands,
// args, env values and subPathExpr.
// Invariants: every function is pure over its arguments and matches the
// upstream v1.36 helper of the same name (pkg/kubelet/types,
// pkg/api/v1/pod, third_party/forked/golang/expansion).
package podutil
