package streaming

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

var (
	errContainerNotFound = errors.New("container not found")
	errPodNotFound       = errors.New("pod not found")
)

// runningContainer is the ID of the running container t names in pod, the
// newest if the runtime has several. A UID in the path must be pod's:
// upstream looks the container up by that UID, which finds nothing (or
// another pod's container) when it differs.
func (s *server) runningContainer(ctx context.Context, t target, pod *v1.Pod) (string, error) {
	uid, name := pod.UID, t.container
	if t.uid != "" && t.uid != uid {
		return "", fmt.Errorf("%w (%q): pod %s has UID %s, not %s", errContainerNotFound, name, t.fullName(), uid, t.uid)
	}
	ctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	defer cancel()
	resp, err := s.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{
				criconfig.LabelPodUID:        string(uid),
				criconfig.LabelContainerName: name,
			},
		},
	})
	if err != nil {
		return "", fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	var newest *runtimeapi.Container
	for _, c := range resp.GetContainers() {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if newest == nil || c.GetCreatedAt() > newest.GetCreatedAt() {
			newest = c
		}
	}
	if newest == nil {
		return "", fmt.Errorf("%w (%q)", errContainerNotFound, name)
	}
	return newest.GetId(), nil
}

// readySandbox is the ID of pod uid's ready sandbox, the newest if the
// runtime has several.
func (s *server) readySandbox(ctx context.Context, uid types.UID) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	defer cancel()
	resp, err := s.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{
			State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
			LabelSelector: map[string]string{criconfig.LabelPodUID: string(uid)},
		},
	})
	if err != nil {
		return "", fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	var newest *runtimeapi.PodSandbox
	for _, sb := range resp.GetItems() {
		if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if newest == nil || sb.GetCreatedAt() > newest.GetCreatedAt() {
			newest = sb
		}
	}
	if newest == nil {
		return "", fmt.Errorf("%w: no ready sandbox for pod UID %s", errPodNotFound, uid)
	}
	return newest.GetId(), nil
}
