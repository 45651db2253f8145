package containergc

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/node/eviction"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

// DesiredPods is what PodStateOf needs of the pod manager.
type DesiredPods interface {
	Get(uid types.UID) (*v1.Pod, bool)
}

// WorkerStates is what PodStateOf needs of the pod workers.
type WorkerStates interface {
	States() map[types.UID]podworkers.PodState
}

// PodStatuses is what PodStateOf needs of the status manager.
type PodStatuses interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

var (
	_ DesiredPods  = (*podmanager.Manager)(nil)
	_ WorkerStates = (*podworkers.PodWorkers)(nil)
	_ PodStatuses  = (*statusmanager.Manager)(nil)
)

// PodStateConfig configures PodStateOf.
type PodStateConfig struct {
	Pods     DesiredPods  // required
	Workers  WorkerStates // required
	Statuses PodStatuses  // required
}

// PodStateOf answers the GC's questions from the pod manager, the pod
// workers and the status manager, as upstream's pod workers do.
func PodStateOf(cfg PodStateConfig) PodState { return podState(cfg) }

type podState PodStateConfig

// ShouldPodContentBeRemoved: an evicted pod at once (its status says so),
// a pod with a worker once removed from its source and terminated, a pod
// the kubelet does not know at all.
func (s podState) ShouldPodContentBeRemoved(uid types.UID) bool {
	if st, ok := s.Statuses.Get(uid); ok && st.Phase == v1.PodFailed && st.Reason == eviction.Reason {
		return true
	}
	if w, ok := s.Workers.States()[uid]; ok {
		return w.Removed && w.State == podworkers.Terminated
	}
	_, known := s.Pods.Get(uid)
	return !known
}

// ShouldPodRuntimeBeRemoved: a terminated pod, or one the kubelet does not know.
func (s podState) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	if w, ok := s.Workers.States()[uid]; ok {
		return w.State == podworkers.Terminated
	}
	_, known := s.Pods.Get(uid)
	return !known
}
