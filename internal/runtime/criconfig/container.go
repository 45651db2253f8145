package criconfig

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// ContainerInputs is what ContainerConfig needs besides the node Options.
type ContainerInputs struct {
	Pod          *v1.Pod
	Container    *v1.Container
	RestartCount int
	// PodIPs are the sandbox's IPs; for a hostNetwork pod an empty list means
	// the host IPs. HostIPs override Options.HostIPs when set.
	PodIPs, HostIPs []string
	// ImageRef is the image id the runtime resolved ("" means spec image).
	ImageRef string
	// ImageUID and ImageUsername are the user the image runs as (from
	// ImageStatus), for runAsNonRoot and the default runAsUser.
	ImageUID      *int64
	ImageUsername string
	// Mounts are computed by the caller (volumes, /etc/hosts, termination log).
	Mounts []*runtimeapi.Mount
	// Devices and CDIDevices are passed through (device plugins, DRA).
	Devices    []*runtimeapi.Device
	CDIDevices []*runtimeapi.CDIDevice
	// Annotations are extra container annotations (device plugins); the
	// kubelet's own keys win.
	Annotations map[string]string
	// TargetContainerID makes an ephemeral container join that container's
	// PID namespace (targetContainerName), unless the pod shares one.
	TargetContainerID string
	// SandboxConfig is the config the pod's sandbox was created with; its user
	// namespace, when set, is reused so containers match their sandbox.
	SandboxConfig *runtimeapi.PodSandboxConfig
}

// ContainerConfig translates one container of a pod into its CRI config.
// Every error wraps ErrContainerConfig.
func ContainerConfig(ctx context.Context, in ContainerInputs, o Options) (*runtimeapi.ContainerConfig, error) {
	cfg, err := containerConfig(ctx, &in, &o)
	if err != nil {
		return nil, &configError{err: err}
	}
	return cfg, nil
}

func containerConfig(ctx context.Context, in *ContainerInputs, o *Options) (*runtimeapi.ContainerConfig, error) {
	pod, c := in.Pod, in.Container
	if pod == nil || c == nil {
		return nil, errors.New("container config needs a pod and a container")
	}
	if pod.Spec.HostNetwork && len(in.PodIPs) == 0 {
		in.PodIPs = o.hostIPs(in)
	}
	if err := VerifyRunAsNonRoot(pod, c, in.ImageUID, in.ImageUsername); err != nil {
		return nil, err
	}
	envs, envMap, err := o.containerEnv(ctx, in)
	if err != nil {
		return nil, err
	}
	annotations, err := ContainerAnnotations(pod, c, in.RestartCount, in.Annotations)
	if err != nil {
		return nil, err
	}
	image := in.ImageRef
	if image == "" {
		image = c.Image
	}
	lookup := podutil.MappingFuncFor(envMap)
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Labels:      ContainerLabels(pod, c),
		Annotations: annotations,
		LogPath:     ContainerLogPath(c.Name, in.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Devices:     in.Devices,
		CDIDevices:  in.CDIDevices,
	}
	if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		sig, ok := runtimeapi.Signal_value[string(*c.Lifecycle.StopSignal)]
		if !ok {
			return nil, fmt.Errorf("unsupported stop signal %q", *c.Lifecycle.StopSignal)
		}
		cfg.StopSignal = runtimeapi.Signal(sig)
	}

	ns, err := o.containerNamespaces(in)
	if err != nil {
		return nil, err
	}
	resources, err := o.containerResources(pod, c)
	if err != nil {
		return nil, err
	}
	sc, err := o.containerSecurityContext(pod, c, in, ns)
	if err != nil {
		return nil, err
	}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: resources, SecurityContext: sc}
	cfg.Mounts = mountsFor(in.Mounts, ns.UsernsOptions)
	return cfg, nil
}

// containerNamespaces are the pod's namespaces, with the sandbox's user
// namespace when it has one and an ephemeral container's PID target.
func (o *Options) containerNamespaces(in *ContainerInputs) (*runtimeapi.NamespaceOption, error) {
	ns := namespaceModes(in.Pod)
	if userns := in.SandboxConfig.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); userns != nil {
		ns.UsernsOptions = proto.Clone(userns).(*runtimeapi.UserNamespace)
	} else {
		var err error
		if ns.UsernsOptions, err = o.userNamespace(in.Pod); err != nil {
			return nil, err
		}
	}
	if in.TargetContainerID != "" && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid = runtimeapi.NamespaceMode_TARGET
		ns.TargetId = in.TargetContainerID
	}
	return ns, nil
}

// mountsFor copies the caller's mounts, adding the user namespace's ID
// mappings when the pod has its own.
func mountsFor(mounts []*runtimeapi.Mount, userns *runtimeapi.UserNamespace) []*runtimeapi.Mount {
	if userns.GetMode() != runtimeapi.NamespaceMode_POD {
		return mounts
	}
	out := make([]*runtimeapi.Mount, len(mounts))
	for i, m := range mounts {
		cp := proto.Clone(m).(*runtimeapi.Mount)
		cp.UidMappings, cp.GidMappings = userns.Uids, userns.Gids
		out[i] = cp
	}
	return out
}

func expandAll(in []string, lookup func(string) string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = podutil.Expand(s, lookup)
	}
	return out
}
