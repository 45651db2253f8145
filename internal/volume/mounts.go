package volume

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Propagation maps a volumeMount's mountPropagation to CRI (nil → private).
func Propagation(p *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *p {
	case v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid mount propagation mode %q", *p)
}

// ValidateSubPath rejects absolute subPaths and '..' components.
func ValidateSubPath(subPath string) error {
	if filepath.IsAbs(subPath) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	for _, part := range strings.Split(filepath.ToSlash(subPath), "/") {
		if part == ".." {
			return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
		}
	}
	return nil
}

// ExpandSubPathExpr expands $(VAR) in a subPathExpr from env (podutil's
// expansion); as upstream, any referenced variable that is unset or empty
// is an error naming each such variable once, sorted.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	missing := map[string]bool{}
	out := podutil.Expand(expr, func(name string) string {
		v := env[name]
		if v == "" {
			missing[name] = true
		}
		return v
	})
	if len(missing) > 0 {
		names := slices.Sorted(maps.Keys(missing))
		return "", fmt.Errorf("missing value for %s", strings.Join(names, ", "))
	}
	return out, nil
}

// containerEnv collects the values subPathExpr may use: literal env values
// (with $(VAR) references to earlier entries expanded) and downward-API
// fieldRefs that are known without the runtime.
func containerEnv(pod *v1.Pod, c *v1.Container, nodeName string) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = podutil.Expand(e.Value, podutil.MappingFuncFor(env))
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "spec.nodeName":
				env[e.Name] = nodeName
			case "spec.serviceAccountName":
				env[e.Name] = pod.Spec.ServiceAccountName
			case "status.podIP":
				env[e.Name] = pod.Status.PodIP
			case "status.hostIP":
				env[e.Name] = pod.Status.HostIP
			default:
				if v, err := podFieldValue(pod, e.ValueFrom.FieldRef.FieldPath); err == nil {
					env[e.Name] = v
				}
			}
		}
	}
	return env
}

// MountSubPath is a volumeMount's subPath, or its subPathExpr expanded
// with the container's environment, validated (relative, no ".."); "" when
// it has neither.
func MountSubPath(vm v1.VolumeMount, env map[string]string) (string, error) {
	subPath := vm.SubPath
	if vm.SubPathExpr != "" {
		var err error
		if subPath, err = ExpandSubPathExpr(vm.SubPathExpr, env); err != nil {
			return "", fmt.Errorf("volume %q subPathExpr %q: %w", vm.Name, vm.SubPathExpr, err)
		}
	}
	if subPath != "" {
		if err := ValidateSubPath(subPath); err != nil {
			return "", err
		}
	}
	return subPath, nil
}

// mountFor turns the index-th volumeMount of container c into a CRI mount;
// hostPath is where the volume was set up. A subPath is pinned by a bind
// mount under the pod's volume-subpaths directory (bindSubPath) and the
// runtime gets that path. API data volumes are always read-only.
func (m *Manager) mountFor(pod *v1.Pod, c *v1.Container, index int, vm v1.VolumeMount, vol *v1.Volume, hostPath string, env map[string]string) (*runtimeapi.Mount, error) {
	prop, err := Propagation(vm.MountPropagation)
	if err != nil {
		return nil, err
	}
	subPath, err := MountSubPath(vm, env)
	if err != nil {
		return nil, err
	}
	if subPath != "" {
		target := SubPathTarget(filepath.Join(m.cfg.PodsDir, string(pod.UID)), vol.Name, c.Name, index)
		hostPath, err = bindSubPath(subPathRequest{VolumePath: hostPath, SubPath: subPath, Create: !isAPIData(vol), Target: target})
		if err != nil {
			// As upstream, the details (host paths) go to the log only.
			klog.ErrorS(err, "Failed to prepare subPath for volumeMount of the container", "pod", klog.KObj(pod), "containerName", c.Name, "volumeMountName", vm.Name)
			switch {
			case errors.Is(err, errSubPathMissing):
				return nil, fmt.Errorf("unable to provision SubPath `%s`: it does not exist in the volume", subPath)
			case errors.Is(err, errSubPathCreate):
				return nil, fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", vm.Name, c.Name)
			}
			return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", vm.Name, c.Name)
		}
	}
	asked := vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled
	supported := asked && m.cfg.RecursiveReadOnly != nil && m.cfg.RecursiveReadOnly()
	rro, err := ResolveRecursiveReadOnly(vm, supported)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
	}
	return &runtimeapi.Mount{
		ContainerPath:     vm.MountPath,
		HostPath:          hostPath,
		Readonly:          vm.ReadOnly || isAPIData(vol),
		RecursiveReadOnly: rro,
		Propagation:       prop,
	}, nil
}

// ResolveRecursiveReadOnly decides whether a mount is recursively
// read-only, as upstream: Disabled (or unset) never; IfPossible when the
// runtime supports it; Enabled when it does, else an error (the container
// cannot be created). Either needs a read-only mount without propagation.
// It is pure.
func ResolveRecursiveReadOnly(vm v1.VolumeMount, runtimeSupports bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", vm.Name, *vm.MountPropagation)
	}
	switch mode := *vm.RecursiveReadOnly; mode {
	case v1.RecursiveReadOnlyIfPossible:
		return runtimeSupports, nil
	case v1.RecursiveReadOnlyEnabled:
		if !runtimeSupports {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}
