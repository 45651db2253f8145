package podutil

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// IsRestartableInitContainer reports whether an init container is a sidecar:
// its restartPolicy is Always.
func IsRestartableInitContainer(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// HasRestartableInitContainer reports whether the pod has a sidecar.
func HasRestartableInitContainer(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// RuntimeContainerID strips the "<runtime>://" prefix of a container ID as
// the API has it (status.containerStatuses[].containerID), leaving the
// runtime's own ID.
func RuntimeContainerID(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}
