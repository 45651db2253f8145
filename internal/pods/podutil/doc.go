// Package podutil owns the small facts about a pod that many parts of the
// kubelet ask: where it came from (static, mirror), whether it is critical,
// which init containers are sidecars, which config maps and secrets it
// references, and $(VAR) expansion in commands,
// args, env values and subPathExpr.
// Invariants: every function is pure over its arguments and matches the
// upstream v1.36 helper of the same name (pkg/kubelet/types,
// pkg/api/v1/pod, pkg/apis/core/v1/helper, third_party/forked/golang/
// expansion); the tests hold upstream's own cases. They are written here
// because upstream keeps them in k8s.io/kubernetes, which this module must
// not require, and neither component-helpers nor apimachinery carries them;
// pod requests/limits and the sysctl namespaces do live in component-helpers
// and are used from there.
package podutil
