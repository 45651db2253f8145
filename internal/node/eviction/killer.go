package eviction

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

// podCleanupTimeout bounds the wait beyond the grace period, as upstream.
const podCleanupTimeout = 30 * time.Second

// Workers is what the killer needs of the pod workers.
type Workers interface {
	UpdatePod(u podworkers.Update)
}

// Statuses is what the killer needs of the status manager.
type Statuses interface {
	Get(uid types.UID) (v1.PodStatus, bool)
	Set(pod *v1.Pod, s v1.PodStatus)
}

var (
	_ Workers  = (*podworkers.PodWorkers)(nil)
	_ Statuses = (*statusmanager.Manager)(nil)
)

// KillerConfig configures a Killer.
type KillerConfig struct {
	Workers  Workers     // required
	Statuses Statuses    // required
	Clock    clock.Clock // required
}

// Killer evicts pods through the pod workers, as upstream's killPodNow.
type Killer struct{ cfg KillerConfig }

var _ PodKiller = (*Killer)(nil)

// NewKiller returns a Killer.
func NewKiller(cfg KillerConfig) *Killer { return &Killer{cfg: cfg} }

// EvictPod stores the Evicted status first (so no sync reports the pod
// otherwise), asks the pod's worker to stop it within gracePeriod, and
// waits until it is terminated, at most the grace period plus
// podCleanupTimeout.
func (k *Killer) EvictPod(ctx context.Context, p *v1.Pod, gracePeriod int64, st v1.PodStatus) error {
	return k.TerminatePod(ctx, p, gracePeriod, func(cur v1.PodStatus) v1.PodStatus { return EvictedPodStatus(cur, st) })
}

// TerminatePod is EvictPod with the status computed from the pod's
// current one (graceful node shutdown keeps a Succeeded phase): status is
// stored, then the pod is stopped within gracePeriod, as upstream's
// killPodNow with its status function.
func (k *Killer) TerminatePod(ctx context.Context, p *v1.Pod, gracePeriod int64, status func(cur v1.PodStatus) v1.PodStatus) error {
	cur, _ := k.cfg.Statuses.Get(p.UID)
	k.cfg.Statuses.Set(p, status(cur))
	done := make(chan struct{})
	k.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Kill, GracePeriod: &gracePeriod, Terminated: done})
	timeout := k.cfg.Clock.NewTimer(time.Duration(gracePeriod)*time.Second + podCleanupTimeout)
	defer timeout.Stop()
	select {
	case <-done:
		return nil
	case <-timeout.C():
		return fmt.Errorf("pod %s not terminated in time", klog.KObj(p))
	case <-ctx.Done():
		return fmt.Errorf("pod %s not terminated: %w", klog.KObj(p), ctx.Err())
	}
}

// EvictedPodStatus is cur with the eviction's phase, reason and message,
// and its conditions in place of any DisruptionTarget cur had. Pure.
func EvictedPodStatus(cur, evicted v1.PodStatus) v1.PodStatus {
	out := *cur.DeepCopy()
	out.Phase, out.Reason, out.Message = evicted.Phase, evicted.Reason, evicted.Message
	var conds []v1.PodCondition
	for _, c := range out.Conditions {
		if c.Type != v1.DisruptionTarget {
			conds = append(conds, c)
		}
	}
	out.Conditions = append(conds, evicted.Conditions...)
	return out
}
