package statusmanager

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// DesiredPods is what Targets needs of the pod manager.
type DesiredPods interface {
	Get(uid types.UID) (*v1.Pod, bool)
	Mirror(static *v1.Pod) (*v1.Pod, bool)
}

var _ DesiredPods = (*podmanager.Manager)(nil)

// TargetsConfig configures Targets.
type TargetsConfig struct {
	Pods     DesiredPods     // required
	Statuses *Manager        // required: where rejected pods' statuses go
	Recorder events.Recorder // required
	Clock    clock.Clock     // required
}

// Targets maps a pod UID to the API object its status is written to (the
// pod, or a static pod's mirror pod), and keeps the pods admission
// rejected: they are in no pod manager, yet their Failed status must
// reach the API.
type Targets struct {
	cfg      TargetsConfig
	mu       sync.Mutex
	rejected map[types.UID]*v1.Pod
}

// NewTargets returns Targets.
func NewTargets(cfg TargetsConfig) *Targets {
	return &Targets{cfg: cfg, rejected: map[types.UID]*v1.Pod{}}
}

// Reject records a pod admission refused, as upstream: its status turns
// Failed with the reason and message, and a warning event says why.
func (t *Targets) Reject(p *v1.Pod, reason, message string) {
	t.mu.Lock()
	t.rejected[p.UID] = p
	t.mu.Unlock()
	t.cfg.Statuses.Set(p, RejectedStatus(reason, message, t.cfg.Clock.Now()))
	t.cfg.Recorder.Eventf(p, v1.EventTypeWarning, reason, "%s", message)
}

// Target is APISyncConfig.Target: false when the pod is unknown or is a
// static pod without a mirror pod of its version yet.
func (t *Targets) Target(uid types.UID) (Target, bool) {
	obj, ok := t.Observed(uid)
	if !ok {
		return Target{}, false
	}
	return Target{Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}, true
}

// Observed is APISyncConfig.Observed: the API object uid's status goes to,
// as the pod manager last saw it; false as for Target.
func (t *Targets) Observed(uid types.UID) (*v1.Pod, bool) {
	p, ok := t.cfg.Pods.Get(uid)
	if !ok {
		t.mu.Lock()
		p, ok = t.rejected[uid]
		t.mu.Unlock()
		if !ok {
			return nil, false
		}
	}
	return t.object(p)
}

// object is the API object pod's status goes to: the pod as the pod
// manager has it last (a rejected or removed pod: as given), or a static
// pod's mirror pod of its version.
func (t *Targets) object(pod *v1.Pod) (*v1.Pod, bool) {
	if podutil.IsStaticPod(pod) {
		mp, ok := t.cfg.Pods.Mirror(pod)
		if !ok || !podutil.IsMirrorOf(mp, pod) {
			return nil, false
		}
		return mp, true
	}
	if cur, ok := t.cfg.Pods.Get(pod.UID); ok {
		return cur, true
	}
	return pod, true
}

// Reported is podsync.Config.Reported: the status the API server holds for
// pod (as the last watch event showed it) and the UID of the object that
// holds it; false for a static pod without a mirror pod of its version.
func (t *Targets) Reported(pod *v1.Pod) (v1.PodStatus, types.UID, bool) {
	obj, ok := t.object(pod)
	if !ok {
		return v1.PodStatus{}, "", false
	}
	return *obj.Status.DeepCopy(), obj.UID, true
}

// RejectedStatus is the status of a pod admission refused, as upstream.
func RejectedStatus(reason, message string, now time.Time) v1.PodStatus {
	t := metav1.NewTime(now)
	return v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: message, StartTime: &t}
}
