package allocation

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/qos"
)

// Retry delays of pending (deferred) resizes, as upstream's: the first
// periodic retry 30 s after start, then every 3 minutes; any event that
// may free resources (a pod removed, resized down or terminated) retries
// at once.
const (
	initialRetryDelay = 30 * time.Second
	retryDelay        = 3 * time.Minute
)

// Triggers of a retry of the pending resizes, as upstream labels
// kubelet_pod_deferred_accepted_resizes_total.
const (
	TriggerPodResized    = "pod_resized"
	TriggerPodUpdated    = "pod_updated"
	TriggerPodsAdded     = "pods_added"
	TriggerPodsRemoved   = "pods_removed"
	TriggerPodTerminated = "pod_terminated"
	triggerPeriodic      = "periodic_retry"
)

// ReasonError is the PodResizeInProgress reason of a resize the runtime
// could not actuate.
const ReasonError = v1.PodReasonError

// Records are what the kubelet allocated to each pod (a checkpointed
// State) and each pod's resize conditions: what a pod's sync reads. Safe
// for concurrent use.
type Records struct {
	allocated *State
	clock     clock.Clock
	metrics   *metrics.Metrics

	condMu sync.Mutex
	conds  map[types.UID]resizeConditions
}

// NewRecords returns the records over a State; m receives the pending and
// in-progress resize gauges (nil: a private set).
func NewRecords(allocated *State, clk clock.Clock, m *metrics.Metrics) *Records {
	if m == nil {
		m = metrics.New()
	}
	return &Records{allocated: allocated, clock: clk, metrics: m, conds: map[types.UID]resizeConditions{}}
}

// Config is what a Manager needs.
type Config struct {
	// Records are where allocations and conditions are kept (required).
	Records  *Records
	Clock    clock.Clock     // required
	Recorder events.Recorder // required
	// Admit runs the node's admission (pressure, sysctls, resources...) for
	// pod beside others, the active pods with their allocated resources.
	// Required.
	Admit func(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string)
	// Active lists the pods that hold node resources, as their sources
	// have them (required).
	Active func() []*v1.Pod
	// Pod finds a pod by UID as its source has it (required).
	Pod func(uid types.UID) (*v1.Pod, bool)
	// Sync asks for a sync of a pod whose allocation or resize conditions
	// changed (required).
	Sync func(uid types.UID)
	// SourcesReady says every pod source has been seen; pending resizes
	// wait for it (they must count every pod). Nil means ready.
	SourcesReady func() bool
	// LimitedSwap reports whether a container gets swap; a memory resize of
	// such a container is infeasible, as upstream. Nil means none does.
	LimitedSwap func(pod *v1.Pod, c *v1.Container) bool
	// Metrics receives the resize metrics; nil means the Records' set.
	Metrics *metrics.Metrics
}

// resizeConditions are one pod's PodResizePending and PodResizeInProgress.
type resizeConditions struct {
	pending, inProgress *v1.PodCondition
}

// Manager decides pod allocations and in-place resizes, keeping them in
// its Records. Safe for concurrent use.
type Manager struct {
	cfg Config
	*Records

	mu      sync.Mutex // serialises allocation decisions
	pending []types.UID

	retried chan struct{} // restarts the periodic retry's timer
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Metrics == nil {
		cfg.Metrics = cfg.Records.metrics
	}
	return &Manager{cfg: cfg, Records: cfg.Records, retried: make(chan struct{}, 1)}
}

// Apply returns pod as it runs: with the resources allocated to it (pod is
// copied only when they differ from its spec), and whether they differ.
func (r *Records) Apply(pod *v1.Pod) (*v1.Pod, bool) {
	pr, ok := r.allocated.Pod(pod.UID)
	if !ok {
		return pod, false
	}
	return Apply(pod, pr)
}

// allocatedOthers are the active pods but pod, each with its allocation.
func (m *Manager) allocatedOthers(pod *v1.Pod, active []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(active))
	for _, p := range active {
		if p.UID == pod.UID {
			continue
		}
		a, _ := m.Apply(p)
		out = append(out, a)
	}
	return out
}

// AddPod admits a new pod beside the active ones, with the resources it
// was allocated before (a restarted kubelet) or its spec's, and records
// the allocation when admitted. A pod whose spec asks for more than its
// allocation (resized while the kubelet was down) gets the resize queued,
// and its resize conditions are taken back from its API status.
func (m *Manager) AddPod(pod *v1.Pod, active []*v1.Pod) (ok bool, reason, message string) {
	m.mu.Lock()
	allocated, resized := m.Apply(pod)
	ok, reason, message = m.cfg.Admit(allocated, m.allocatedOthers(pod, active))
	if ok {
		if err := m.allocated.SetPod(pod.UID, Of(allocated)); err != nil {
			klog.ErrorS(err, "Cannot checkpoint the pod's allocated resources", "pod", klog.KObj(pod))
		}
	}
	m.mu.Unlock()
	if !ok {
		return ok, reason, message
	}
	m.backfill(pod)
	if resized {
		m.push(pod.UID)
		m.RetryPending(TriggerPodsAdded)
	}
	return ok, reason, message
}

// backfill takes the pod's resize conditions from its API status, so a
// restarted kubelet keeps reporting them (upstream's
// BackfillPodResizeConditions).
func (m *Records) backfill(pod *v1.Pod) {
	m.condMu.Lock()
	defer m.condMu.Unlock()
	c := m.conds[pod.UID]
	for _, pc := range pod.Status.Conditions {
		switch pc.Type {
		case v1.PodResizePending:
			c.pending = m.condition(pc.Type, nil, pc.Reason, pc.Message, pc.ObservedGeneration)
		case v1.PodResizeInProgress:
			c.inProgress = m.condition(pc.Type, nil, pc.Reason, pc.Message, pc.ObservedGeneration)
		}
	}
	if c.pending != nil || c.inProgress != nil {
		m.conds[pod.UID] = c
	}
	m.recordCountsLocked()
}

// HandleUpdate looks at a pod's new spec (a source's UPDATE): a changed
// request or limit queues a resize and tries the pending ones at once; a
// resize reverted before it was allocated clears PodResizePending.
func (m *Manager) HandleUpdate(oldPod, newPod *v1.Pod) {
	changes, resized := ResizeRequested(oldPod, newPod)
	for _, c := range changes {
		m.cfg.Metrics.ContainerRequestedResizes.WithLabelValues(c.Resource, c.Requirement, c.Operation).Inc()
	}
	if !resized {
		return
	}
	if _, differs := m.Apply(newPod); differs {
		m.push(newPod.UID)
		m.RetryPending(TriggerPodUpdated)
		return
	}
	if m.clearPending(newPod.UID) {
		m.cfg.Sync(newPod.UID)
	}
}

// push queues a pod's resize for evaluation.
func (m *Manager) push(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.pending, uid) {
		m.pending = append(m.pending, uid)
	}
}

// HasPending reports whether any resize waits.
func (m *Manager) HasPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending) > 0
}

// RetryPending evaluates every pending resize again, those that free
// resources (no request grows) first, then by priority, QoS class (a
// Guaranteed pod first) and time pending, as upstream; a pod whose resize
// was allocated, or whose conditions changed, is synced.
func (m *Manager) RetryPending(trigger string) {
	select {
	case m.retried <- struct{}{}:
	default:
	}
	if m.cfg.SourcesReady != nil && !m.cfg.SourcesReady() {
		klog.V(4).InfoS("Pending resizes wait: the pod sources are not all seen yet")
		return
	}
	m.mu.Lock()
	pods := m.pendingPodsLocked()
	var keep []types.UID
	var sync []types.UID
	for _, pod := range pods {
		before := m.conditionsOf(pod.UID)
		wasDeferred := m.deferred(pod.UID)
		allocated, err := m.handleResizeLocked(pod)
		switch {
		case err != nil:
			klog.ErrorS(err, "Cannot handle the pod's resize", "pod", klog.KObj(pod))
			keep = append(keep, pod.UID)
		case m.deferred(pod.UID):
			keep = append(keep, pod.UID)
		case allocated && wasDeferred:
			m.cfg.Metrics.PodDeferredAcceptedResizes.WithLabelValues(trigger).Inc()
		}
		if allocated || !before.equal(m.conditionsOf(pod.UID)) {
			sync = append(sync, pod.UID)
		}
	}
	m.pending = keep
	m.mu.Unlock()
	for _, uid := range sync {
		m.cfg.Sync(uid)
	}
}

// pendingPodsLocked returns the pending pods still known, in upstream's
// order of evaluation.
func (m *Manager) pendingPodsLocked() []*v1.Pod {
	var pods []*v1.Pod
	for _, uid := range m.pending {
		if p, ok := m.cfg.Pod(uid); ok {
			pods = append(pods, p)
		}
	}
	increasing := func(p *v1.Pod) bool {
		allocated, differs := m.Apply(p)
		if !differs {
			return false
		}
		o, n := resourcehelper.PodRequests(allocated, resourcehelper.PodResourcesOptions{}), resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		return n.Memory().Cmp(*o.Memory()) > 0 || n.Cpu().Cmp(*o.Cpu()) > 0
	}
	priority := func(p *v1.Pod) int32 {
		if p.Spec.Priority != nil {
			return *p.Spec.Priority
		}
		return 0
	}
	since := func(p *v1.Pod) *metav1.Time {
		if c := m.conditionsOf(p.UID).pending; c != nil {
			return &c.LastTransitionTime
		}
		return nil
	}
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		if ia, ib := increasing(a), increasing(b); ia != ib {
			if !ia {
				return -1
			}
			return 1
		}
		if pa, pb := priority(a), priority(b); pa != pb {
			if pa > pb {
				return -1
			}
			return 1
		}
		if ga, gb := qos.PodQOSClass(a) == v1.PodQOSGuaranteed, qos.PodQOSClass(b) == v1.PodQOSGuaranteed; ga != gb {
			if ga {
				return -1
			}
			return 1
		}
		ta, tb := since(a), since(b)
		switch {
		case ta == nil && tb == nil:
			return 0
		case ta == nil:
			return 1
		case tb == nil:
			return -1
		case ta.Before(tb):
			return -1
		case tb.Before(ta):
			return 1
		}
		return 0
	})
	return pods
}

// handleResizeLocked decides one pod's resize: allocated now, deferred or
// infeasible (upstream's handlePodResourcesResize). It reports whether the
// new resources were allocated.
func (m *Manager) handleResizeLocked(pod *v1.Pod) (bool, error) {
	allocated, differs := m.Apply(pod)
	if !differs {
		m.clearPending(pod.UID)
		return false, nil
	}
	reason, message := v1.PodReasonInfeasible, Infeasible(pod, allocated, m.cfg.LimitedSwap)
	fit := false
	if message != "" {
		m.cfg.Metrics.PodInfeasibleResizes.WithLabelValues("swap_limitation").Inc()
	} else {
		fit, reason, message = m.cfg.Admit(pod, m.allocatedOthers(pod, m.cfg.Active()))
	}
	if fit {
		if err := m.allocated.SetPod(pod.UID, Of(pod)); err != nil {
			return false, err
		}
		m.clearPending(pod.UID)
		m.ClearInProgress(pod.UID)
		m.SetInProgress(pod.UID, "", "", pod.Generation)
		m.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.ResizeStarted, "%s", Message(pod, pod.Generation, "", "Pod resize started"))
		klog.V(2).InfoS("Pod resize allocated", "pod", klog.KObj(pod), "generation", pod.Generation)
		return true, nil
	}
	if reason == "" {
		return false, nil
	}
	if m.setPending(pod.UID, reason, message, pod.Generation) {
		kind := events.ResizeDeferred
		if reason == v1.PodReasonInfeasible {
			kind = events.ResizeInfeasible
		}
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, kind, "%s", Message(pod, pod.Generation, message, "Pod resize "+reason))
		klog.V(2).InfoS("Pod resize not allocated", "pod", klog.KObj(pod), "reason", reason, "message", message)
	}
	return false, nil
}

// RemovePod forgets a pod that is gone and retries the pending resizes,
// which may fit now.
func (m *Manager) RemovePod(uid types.UID) {
	if err := m.allocated.Remove(uid); err != nil {
		klog.V(3).InfoS("Cannot remove the pod's allocation; housekeeping retries", "podUID", uid, "err", err)
	}
	m.condMu.Lock()
	delete(m.conds, uid)
	m.recordCountsLocked()
	m.condMu.Unlock()
	if m.HasPending() {
		m.RetryPending(TriggerPodsRemoved)
	}
}

// RemoveOrphans forgets the allocations of pods not in keep.
func (m *Manager) RemoveOrphans(keep map[types.UID]bool) {
	if err := m.allocated.RemoveOrphans(keep); err != nil {
		klog.V(3).InfoS("Cannot remove orphaned allocations", "err", err)
	}
}

// Run retries the pending resizes periodically until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	delay := initialRetryDelay
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.retried:
			delay = retryDelay
			if m.cfg.SourcesReady != nil && !m.cfg.SourcesReady() {
				delay = initialRetryDelay
			}
		case <-m.cfg.Clock.After(delay):
			if m.HasPending() {
				m.RetryPending(triggerPeriodic)
			}
		}
	}
}

// Conditions are the pod's PodResizePending and PodResizeInProgress
// conditions, for its status.
func (m *Records) Conditions(uid types.UID) []v1.PodCondition {
	c := m.conditionsOf(uid)
	var out []v1.PodCondition
	for _, pc := range []*v1.PodCondition{c.pending, c.inProgress} {
		if pc != nil {
			out = append(out, *pc)
		}
	}
	return out
}

// equal compares two pods' resize conditions as the API would show a
// change: presence, reason, message and generation.
func (c resizeConditions) equal(o resizeConditions) bool {
	same := func(a, b *v1.PodCondition) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
	}
	return same(c.pending, o.pending) && same(c.inProgress, o.inProgress)
}

func (m *Records) conditionsOf(uid types.UID) resizeConditions {
	m.condMu.Lock()
	defer m.condMu.Unlock()
	c := m.conds[uid]
	return resizeConditions{pending: c.pending.DeepCopy(), inProgress: c.inProgress.DeepCopy()}
}

func (m *Records) deferred(uid types.UID) bool {
	c := m.conditionsOf(uid).pending
	return c != nil && c.Reason == v1.PodReasonDeferred
}

// Infeasible reports whether the pod's pending resize can never be done.
func (m *Records) Infeasible(uid types.UID) bool {
	c := m.conditionsOf(uid).pending
	return c != nil && c.Reason == v1.PodReasonInfeasible
}

// condition builds a resize condition; its transition time moves only
// when its reason does (upstream's updatedPodResizeCondition).
func (m *Records) condition(t v1.PodConditionType, old *v1.PodCondition, reason, message string, generation int64) *v1.PodCondition {
	now := metav1.NewTime(m.clock.Now())
	transition := now
	if old != nil && old.Reason == reason {
		transition = old.LastTransitionTime
	}
	return &v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastProbeTime: now, LastTransitionTime: transition,
		ObservedGeneration: generation, Reason: reason, Message: message}
}

// setPending records PodResizePending (any reason but Infeasible reads
// Deferred); it reports whether its reason or generation changed.
func (m *Records) setPending(uid types.UID, reason, message string, generation int64) bool {
	if reason != v1.PodReasonInfeasible {
		reason = v1.PodReasonDeferred
	}
	m.condMu.Lock()
	defer m.condMu.Unlock()
	c := m.conds[uid]
	old := c.pending
	c.pending = m.condition(v1.PodResizePending, old, reason, message, generation)
	m.conds[uid] = c
	m.recordCountsLocked()
	return old == nil || old.Reason != reason || old.ObservedGeneration != generation
}

// clearPending drops PodResizePending; it reports whether there was one.
func (m *Records) clearPending(uid types.UID) bool {
	m.condMu.Lock()
	defer m.condMu.Unlock()
	c, ok := m.conds[uid]
	if !ok || c.pending == nil {
		return false
	}
	c.pending = nil
	m.conds[uid] = c
	m.recordCountsLocked()
	return true
}

// SetInProgress records PodResizeInProgress. An existing one keeps its
// generation and, when reason and message are empty, its reason and
// message (upstream's SetPodResizeInProgressCondition). It returns the
// condition's generation and whether it changed.
func (m *Records) SetInProgress(uid types.UID, reason, message string, generation int64) (int64, bool) {
	m.condMu.Lock()
	defer m.condMu.Unlock()
	c := m.conds[uid]
	old := c.inProgress
	if old != nil {
		if reason == "" && message == "" {
			reason, message = old.Reason, old.Message
		}
		generation = old.ObservedGeneration
	}
	c.inProgress = m.condition(v1.PodResizeInProgress, old, reason, message, generation)
	m.conds[uid] = c
	m.recordCountsLocked()
	changed := old == nil || old.Reason != c.inProgress.Reason || old.Message != c.inProgress.Message
	return generation, changed
}

// ClearInProgress drops PodResizeInProgress; it returns the generation of
// the one dropped and whether there was one.
func (m *Records) ClearInProgress(uid types.UID) (int64, bool) {
	m.condMu.Lock()
	defer m.condMu.Unlock()
	c, ok := m.conds[uid]
	if !ok || c.inProgress == nil {
		return 0, false
	}
	gen := c.inProgress.ObservedGeneration
	c.inProgress = nil
	m.conds[uid] = c
	m.recordCountsLocked()
	return gen, true
}

// recordCountsLocked sets the pending and in-progress gauges.
func (m *Records) recordCountsLocked() {
	pending := map[string]int{}
	inProgress := 0
	for _, c := range m.conds {
		if c.pending != nil {
			pending[strings.ToLower(c.pending.Reason)]++
		}
		if c.inProgress != nil {
			inProgress++
		}
	}
	m.metrics.PodPendingResizes.Reset()
	for reason, n := range pending {
		m.metrics.PodPendingResizes.WithLabelValues(reason).Set(float64(n))
	}
	m.metrics.PodInProgressResizes.Set(float64(inProgress))
}
