package mirror

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Pods is what the manager reads of the desired pods.
type Pods interface {
	Mirror(p *v1.Pod) (*v1.Pod, bool)
	OrphanedMirrors() []*v1.Pod
}

var _ Pods = (*podmanager.Manager)(nil)

// Manager keeps every static pod's mirror pod in step with it.
type Manager struct {
	client *Client
	pods   Pods
}

// NewManager returns a Manager.
func NewManager(client *Client, pods Pods) *Manager {
	return &Manager{client: client, pods: pods}
}

// Ensure creates the mirror pod of a static pod when it is missing, and
// replaces one that is stale (another hash) or being deleted.
func (m *Manager) Ensure(ctx context.Context, static *v1.Pod) error {
	if !podutil.IsStaticPod(static) {
		return nil
	}
	if mp, ok := m.pods.Mirror(static); ok {
		if mp.DeletionTimestamp == nil && podutil.IsMirrorOf(mp, static) {
			return nil
		}
		klog.V(2).InfoS("Replacing mirror pod", "pod", klog.KObj(mp), "deleting", mp.DeletionTimestamp != nil)
		if err := m.client.Delete(ctx, mp.Namespace, mp.Name, mp.UID); err != nil {
			return err
		}
	}
	return m.client.Create(ctx, static)
}

// DeleteOrphans removes mirror pods whose static pod is gone or changed.
func (m *Manager) DeleteOrphans(ctx context.Context) {
	for _, mp := range m.pods.OrphanedMirrors() {
		if err := m.client.Delete(ctx, mp.Namespace, mp.Name, mp.UID); err != nil {
			klog.ErrorS(err, "Cannot delete orphaned mirror pod", "pod", klog.KObj(mp))
		}
	}
}

// Delete removes a mirror pod now (a user deleted it: it is recreated by
// the next sync of its static pod).
func (m *Manager) Delete(ctx context.Context, mp *v1.Pod) error {
	return m.client.Delete(ctx, mp.Namespace, mp.Name, mp.UID)
}
