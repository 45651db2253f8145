package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// GetPodStatus asks the runtime for everything it has of one pod.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	st := &PodStatus{UID: uid, Name: name, Namespace: namespace}
	sbs, err := m.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{criconfig.LabelPodUID: string(uid)}},
	})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s/%s: %w", namespace, name, err)
	}
	items := sbs.GetItems()
	sort.Slice(items, func(i, j int) bool { return items[i].CreatedAt > items[j].CreatedAt })
	for _, sb := range items {
		s := SandboxStatus{ID: sb.Id, Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: time.Unix(0, sb.CreatedAt), Attempt: sb.GetMetadata().GetAttempt()}
		if s.Ready {
			resp, err := m.cfg.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.Id})
			if err != nil {
				return nil, fmt.Errorf("status of sandbox %s of pod %s/%s: %w", sb.Id, namespace, name, err)
			}
			ps := resp.GetStatus()
			s.HostNetwork = ps.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
			if ip := ps.GetNetwork().GetIp(); ip != "" {
				s.IPs = append(s.IPs, ip)
			}
			for _, extra := range ps.GetNetwork().GetAdditionalIps() {
				s.IPs = append(s.IPs, extra.GetIp())
			}
			if len(st.IPs) == 0 {
				st.IPs = s.IPs
			}
		}
		st.Sandboxes = append(st.Sandboxes, s)
	}
	cs, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{criconfig.LabelPodUID: string(uid)}},
	})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", namespace, name, err)
	}
	for _, c := range cs.GetContainers() {
		resp, err := m.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil {
			// The container may have been removed since the list.
			klog.V(4).InfoS("Container status failed", "containerID", c.Id, "pod", klog.KRef(namespace, name), "err", err)
			continue
		}
		if s := containerStatusFromCRI(resp.GetStatus(), c.PodSandboxId); s != nil {
			st.Containers = append(st.Containers, s)
		}
	}
	sortContainers(st.Containers)
	return st, nil
}

// sortContainers orders newest first; restart count breaks creation-time ties.
func sortContainers(cs []*ContainerStatus) {
	sort.SliceStable(cs, func(i, j int) bool {
		if !cs[i].CreatedAt.Equal(cs[j].CreatedAt) {
			return cs[i].CreatedAt.After(cs[j].CreatedAt)
		}
		return cs[i].RestartCount > cs[j].RestartCount
	})
}

func toState(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return StateExited
	}
	return StateUnknown
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// containerStatusFromCRI converts a CRI status; containers the kubelet did
// not create (no identity labels) are ignored.
func containerStatusFromCRI(s *runtimeapi.ContainerStatus, sandboxID string) *ContainerStatus {
	if s == nil {
		return nil
	}
	meta, err := criconfig.ContainerMetaFrom(s.Labels, s.Annotations)
	if err != nil {
		klog.V(5).InfoS("Ignoring container without kubelet labels", "containerID", s.Id, "err", err)
		return nil
	}
	cs := &ContainerStatus{
		ID:           s.Id,
		Name:         meta.ContainerName,
		State:        toState(s.State),
		CreatedAt:    unixNano(s.CreatedAt),
		StartedAt:    unixNano(s.StartedAt),
		FinishedAt:   unixNano(s.FinishedAt),
		ExitCode:     s.ExitCode,
		Image:        s.GetImage().GetUserSpecifiedImage(),
		ImageRef:     s.ImageRef,
		ImageID:      s.ImageId,
		Hash:         meta.Hash,
		RestartCount: meta.RestartCount,
		Reason:       s.Reason,
		Message:      s.Message,
		SandboxID:    sandboxID,
		GracePeriod:  meta.PodTerminationGracePeriod,
		PreStop:      meta.PreStopHandler,
		Resources:    s.GetResources().GetLinux(),
	}
	if meta.PodDeletionGracePeriod != nil {
		cs.GracePeriod = meta.PodDeletionGracePeriod
	}
	if cs.Image == "" {
		cs.Image = s.GetImage().GetImage()
	}
	if cs.State == StateExited {
		// As upstream, the container's own message enriches the runtime's.
		if msg := terminationMessage(s, meta.TerminationMessagePath, meta.TerminationMessagePolicy); msg != "" {
			if cs.Message != "" {
				cs.Message += ": "
			}
			cs.Message += msg
		}
	}
	return cs
}

// GetPods lists every pod the kubelet created on the runtime, grouped by
// pod UID. With all false, only ready sandboxes and running containers.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*RunningPod, error) {
	return ListPods(ctx, m.cfg.Runtime, all)
}

// ListPods lists the runtime's sandboxes and containers, grouped by pod;
// without all, only the ready sandboxes and the running containers.
func ListPods(ctx context.Context, rs runtimeapi.RuntimeServiceClient, all bool) ([]*RunningPod, error) {
	sreq := &runtimeapi.ListPodSandboxRequest{}
	creq := &runtimeapi.ListContainersRequest{}
	if !all {
		sreq.Filter = &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}
		creq.Filter = &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	}
	sbs, err := rs.ListPodSandbox(ctx, sreq)
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	cs, err := rs.ListContainers(ctx, creq)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return groupPods(sbs.GetItems(), cs.GetContainers()), nil
}

// groupPods groups CRI listings by pod UID; it is pure.
func groupPods(sbs []*runtimeapi.PodSandbox, cs []*runtimeapi.Container) []*RunningPod {
	byUID := map[types.UID]*RunningPod{}
	var order []types.UID
	get := func(uid types.UID, name, ns string) *RunningPod {
		p, ok := byUID[uid]
		if !ok {
			p = &RunningPod{UID: uid, Name: name, Namespace: ns}
			byUID[uid] = p
			order = append(order, uid)
		}
		return p
	}
	for _, sb := range sbs {
		meta, err := criconfig.SandboxMetaFromLabels(sb.Labels)
		if err != nil {
			continue
		}
		p := get(meta.PodUID, meta.PodName, meta.PodNamespace)
		p.Sandboxes = append(p.Sandboxes, SandboxStatus{ID: sb.Id, Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: unixNano(sb.CreatedAt), Attempt: sb.GetMetadata().GetAttempt()})
	}
	for _, c := range cs {
		meta, err := criconfig.ContainerMetaFrom(c.Labels, c.Annotations)
		if err != nil {
			continue
		}
		p := get(meta.PodUID, meta.PodName, meta.PodNamespace)
		p.Containers = append(p.Containers, &ContainerStatus{ID: c.Id, Name: meta.ContainerName, State: toState(c.State),
			CreatedAt: unixNano(c.CreatedAt), Hash: meta.Hash, RestartCount: meta.RestartCount, SandboxID: c.PodSandboxId,
			Image: c.GetImage().GetImage(), ImageRef: c.ImageRef})
	}
	out := make([]*RunningPod, 0, len(order))
	for _, uid := range order {
		p := byUID[uid]
		sort.Slice(p.Sandboxes, func(i, j int) bool { return p.Sandboxes[i].CreatedAt.After(p.Sandboxes[j].CreatedAt) })
		sortContainers(p.Containers)
		out = append(out, p)
	}
	return out
}
