// Package criconfig owns the translation of a v1 Pod into CRI sandbox and
// container configs, and the io.kubernetes.* labels and annotations on them.
// Invariants: functions are pure (host files via Options.ReadFile, config maps
// and secrets via EnvSource); keys, formats and the container hash match the
// upstream kubelet; every ContainerConfig error wraps ErrContainerConfig.
package criconfig
