package kuberuntime

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerState is a container's state as the runtime reports it.
type ContainerState string

const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// ContainerStatus is one container instance of a pod, as the runtime sees it.
type ContainerStatus struct {
	ID           string
	Name         string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Image        string // the image as the pod spec names it
	ImageRef     string // the image the runtime resolved (digest)
	ImageID      string
	Hash         uint64
	RestartCount int
	Reason       string
	Message      string
	SandboxID    string
	// GracePeriod recorded on the container when it was created, used to
	// stop containers of pods the kubelet no longer has a spec for.
	GracePeriod *int64
	// PreStop is the preStop handler recorded on the container, run when a
	// pod the kubelet has no spec for is stopped.
	PreStop *v1.LifecycleHandler
	// Resources are the Linux resources the runtime reports the container
	// runs with (nil when it reports none).
	Resources *runtimeapi.LinuxContainerResources
}

// SandboxStatus is one sandbox of a pod.
type SandboxStatus struct {
	ID          string
	Ready       bool
	CreatedAt   time.Time
	Attempt     uint32
	IPs         []string
	HostNetwork bool
}

// PodStatus is the runtime's whole view of one pod.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes, newest first.
	Sandboxes []SandboxStatus
	// Containers, newest first.
	Containers []*ContainerStatus
	// IPs of the newest ready sandbox.
	IPs []string
}

// FindContainer returns the newest instance of the named container, or nil.
func (s *PodStatus) FindContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// PreviousContainer returns the instance of the named container before the
// newest one, or nil.
func (s *PodStatus) PreviousContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	seen := false
	for _, c := range s.Containers {
		if c.Name == name {
			if seen {
				return c
			}
			seen = true
		}
	}
	return nil
}

// Running reports whether any sandbox is ready or any container running.
func (s *PodStatus) Running() bool {
	if s == nil {
		return false
	}
	for _, sb := range s.Sandboxes {
		if sb.Ready {
			return true
		}
	}
	for _, c := range s.Containers {
		if c.State == StateRunning {
			return true
		}
	}
	return false
}

// RunningPod is a pod found on the runtime, with or without a spec.
type RunningPod struct {
	UID        types.UID
	Name       string
	Namespace  string
	Sandboxes  []SandboxStatus
	Containers []*ContainerStatus
}
