package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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

// MountFor turns one volumeMount into a CRI mount; hostPath is where the
// volume was set up. API data volumes are always read-only.
func MountFor(vm v1.VolumeMount, vol *v1.Volume, hostPath string, env map[string]string) (*runtimeapi.Mount, error) {
	prop, err := Propagation(vm.MountPropagation)
	if err != nil {
		return nil, err
	}
	subPath := vm.SubPath
	if vm.SubPathExpr != "" {
		if subPath, err = ExpandSubPathExpr(vm.SubPathExpr, env); err != nil {
			return nil, fmt.Errorf("volume %q subPathExpr %q: %w", vm.Name, vm.SubPathExpr, err)
		}
	}
	if subPath != "" {
		if hostPath, err = resolveSubPath(hostPath, subPath, !isAPIData(vol)); err != nil {
			return nil, err
		}
	}
	return &runtimeapi.Mount{
		ContainerPath: vm.MountPath,
		HostPath:      hostPath,
		Readonly:      vm.ReadOnly || isAPIData(vol),
		Propagation:   prop,
	}, nil
}

// resolveSubPath validates subPath, creates it when allowed and missing, and
// returns the symlink-free host path, which must stay inside volumePath.
func resolveSubPath(volumePath, subPath string, create bool) (string, error) {
	if err := ValidateSubPath(subPath); err != nil {
		return "", err
	}
	full := filepath.Join(volumePath, subPath)
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) {
		if !create {
			return "", fmt.Errorf("unable to provision SubPath `%s`: it does not exist in the volume", subPath)
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			return "", fmt.Errorf("unable to provision SubPath `%s`: %w", subPath, err)
		}
	}
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return "", fmt.Errorf("resolve volume path %s: %w", volumePath, err)
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("resolve SubPath `%s`: %w", subPath, err)
	}
	if real != base && !strings.HasPrefix(real, base+string(filepath.Separator)) {
		return "", fmt.Errorf("subpath %q not within volume path %q", real, base)
	}
	return real, nil
}
