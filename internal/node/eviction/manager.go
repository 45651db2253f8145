package eviction

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// DefaultMonitoringInterval is upstream's evictionMonitoringPeriod (not
// configurable there either).
const DefaultMonitoringInterval = 10 * time.Second

// notifierRefreshInterval is how often the memcg threshold follows the
// node's changing inactive file cache, as upstream.
const notifierRefreshInterval = 10 * time.Second

// EventThresholdMet is the node event upstream records before reclaiming.
const EventThresholdMet = "EvictionThresholdMet"

// SummaryProvider reads the node and pod stats (internal/node/stats.Provider).
type SummaryProvider interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
}

// ImageGC deletes images no container uses (the image garbage collector).
type ImageGC interface {
	DeleteUnusedImages(ctx context.Context) (freedBytes int64, err error)
}

// ContainerGC deletes every dead container and sandbox it may (the
// container garbage collector).
type ContainerGC interface {
	DeleteAllUnusedContainers(ctx context.Context) error
}

// PodKiller stops a pod for good: it kills it with the grace period,
// stores status (phase Failed, reason Evicted) as its status, and returns
// once its containers are stopped or ctx ends.
type PodKiller interface {
	EvictPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, status v1.PodStatus) error
}

// Config configures a Manager.
type Config struct {
	// Thresholds are the parsed evictionHard/evictionSoft settings
	// (evictionapi.ParseThresholds); none makes Run idle.
	Thresholds []evictionapi.Threshold
	// PressureTransitionPeriod is evictionPressureTransitionPeriod.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is evictionMaxPodGracePeriod.
	MaxPodGracePeriodSeconds int64
	// MonitoringInterval is the time between evaluations; 0 means
	// DefaultMonitoringInterval.
	MonitoringInterval time.Duration

	Summary    SummaryProvider  // required
	ActivePods func() []*v1.Pod // required: pods admitted and not terminated
	Killer     PodKiller        // required
	Recorder   events.Recorder  // required
	Clock      clock.WithTicker // required
	NodeRef    runtime.Object   // the node, for node events; nil skips them
	// ImageGC and ContainerGC reclaim disk before pods are evicted; nil
	// ones are skipped with a log line.
	ImageGC     ImageGC
	ContainerGC ContainerGC
	// DedicatedImageFs reports whether the runtime's images live on a
	// filesystem other than the kubelet root's; nil means they share one.
	DedicatedImageFs func(ctx context.Context) (bool, error)
	// KernelMemcgNotification registers a memory cgroup threshold so
	// crossing memory.available wakes the manager at once (cgroup v1).
	KernelMemcgNotification bool
	// MemoryCgroup is the root memory cgroup directory (cgroup v1), e.g.
	// /sys/fs/cgroup/memory; used with KernelMemcgNotification.
	MemoryCgroup string
	// Metrics receives kubelet_evictions and kubelet_eviction_stats_age_seconds;
	// nil means a private set nobody serves.
	Metrics *metrics.Metrics
	// LocalStorageCapacityIsolation is localStorageCapacityIsolation: each
	// round, pods over their emptyDir sizeLimits or ephemeral-storage
	// limits are evicted (LocalStorageLimitExceeded).
	LocalStorageCapacityIsolation bool
}

// Manager watches the node's resources and evicts pods under pressure.
type Manager struct {
	cfg Config

	mu         sync.RWMutex
	state      State
	conditions []v1.NodeConditionType

	dedicatedImageFs *bool
	notifier         memoryNotifier
	notifierUpdated  time.Time
	wake             chan struct{}
	// changed holds one value while a change of the conditions is unread.
	changed chan struct{}
}

// New checks cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Summary == nil:
		return nil, errors.New("eviction: Summary is required")
	case cfg.ActivePods == nil:
		return nil, errors.New("eviction: ActivePods is required")
	case cfg.Killer == nil:
		return nil, errors.New("eviction: Killer is required")
	case cfg.Recorder == nil:
		return nil, errors.New("eviction: Recorder is required")
	case cfg.Clock == nil:
		return nil, errors.New("eviction: Clock is required")
	}
	if cfg.MonitoringInterval <= 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &Manager{cfg: cfg, wake: make(chan struct{}, 1), changed: make(chan struct{}, 1)}, nil
}

// ConditionsChanged receives a value after the node conditions changed
// (changes not read yet coalesce into one), so the node status can be sent
// at once.
func (m *Manager) ConditionsChanged() <-chan struct{} { return m.changed }

// Conditions returns the pressure conditions the node has now, sorted.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]v1.NodeConditionType(nil), m.conditions...)
}

// IsUnderMemoryPressure, IsUnderDiskPressure and IsUnderPIDPressure report
// the node conditions.
func (m *Manager) IsUnderMemoryPressure() bool {
	return HasCondition(m.Conditions(), v1.NodeMemoryPressure)
}
func (m *Manager) IsUnderDiskPressure() bool {
	return HasCondition(m.Conditions(), v1.NodeDiskPressure)
}
func (m *Manager) IsUnderPIDPressure() bool { return HasCondition(m.Conditions(), v1.NodePIDPressure) }

// Admit is the admission check of the pressure conditions (see Admit).
func (m *Manager) Admit(pod *v1.Pod) (bool, string, string) {
	conds := m.Conditions()
	ok, reason, msg := Admit(pod, conds)
	if !ok {
		klog.InfoS("Failed to admit pod to node", "pod", klog.KObj(pod), "nodeCondition", conds)
	}
	return ok, reason, msg
}

// Run evaluates the thresholds every monitoring interval (and at once when
// the memcg notification fires) until ctx ends. After an eviction it
// evaluates again without waiting, as upstream.
func (m *Manager) Run(ctx context.Context) {
	if len(m.cfg.Thresholds) == 0 && !m.cfg.LocalStorageCapacityIsolation {
		klog.InfoS("Eviction manager: no thresholds configured and local storage isolation off, not monitoring")
		return
	}
	klog.InfoS("Eviction manager: starting control loop", "thresholds", m.cfg.Thresholds, "interval", m.cfg.MonitoringInterval)
	defer func() {
		if m.notifier != nil {
			m.notifier.Close()
		}
	}()
	for {
		evicted, err := m.Synchronize(ctx)
		if err != nil {
			klog.ErrorS(err, "Eviction manager: failed to synchronize")
		}
		if len(evicted) > 0 && ctx.Err() == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.Clock.After(m.cfg.MonitoringInterval):
		case <-m.wake:
			klog.InfoS("Eviction manager: memory threshold crossed, evaluating now")
		}
	}
}

// Synchronize is one evaluation: observe, decide, and act (evict the pods
// over their own storage limits; else reclaim node resources, or evict
// one pod). It returns the evicted pods.
func (m *Manager) Synchronize(ctx context.Context) ([]*v1.Pod, error) {
	if len(m.cfg.Thresholds) == 0 && !m.cfg.LocalStorageCapacityIsolation {
		return nil, nil
	}
	if m.dedicatedImageFs == nil {
		dedicated := false
		if m.cfg.DedicatedImageFs != nil {
			d, err := m.cfg.DedicatedImageFs(ctx)
			if err != nil {
				return nil, fmt.Errorf("find whether the image filesystem is dedicated: %w", err)
			}
			dedicated = d
		}
		m.dedicatedImageFs = &dedicated
		klog.V(2).InfoS("Eviction manager: filesystem layout", "dedicatedImageFs", dedicated)
	}
	active := m.cfg.ActivePods()
	summary, err := m.cfg.Summary.Summary(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("get summary stats: %w", err)
	}
	now := m.cfg.Clock.Now()
	m.updateNotifier(ctx, summary, now)
	obs := Observe(summary)
	logObservations("observations", obs)

	m.mu.Lock()
	next, act := Evaluate(m.cfg.Thresholds, m.state, obs, now, m.cfg.PressureTransitionPeriod)
	changed := !equalConditions(m.conditions, next.Conditions)
	m.state = next
	m.conditions = next.Conditions
	m.mu.Unlock()
	if changed {
		klog.InfoS("Eviction manager: node pressure conditions changed", "nodeConditions", next.Conditions)
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
	// As upstream: pods over their own limits go first, and a round that
	// evicted any does nothing else.
	if m.cfg.LocalStorageCapacityIsolation {
		if evicted := m.localStorageEviction(ctx, active, StatsByUID(summary)); len(evicted) > 0 {
			return evicted, nil
		}
	}
	if len(act) == 0 {
		klog.V(3).InfoS("Eviction manager: no resources are starved")
		return nil, nil
	}
	plan, ok := PlanReclaim(act, *m.dedicatedImageFs)
	if !ok {
		return nil, nil
	}
	klog.InfoS("Eviction manager: attempting to reclaim", "resourceName", plan.Resource)
	if m.cfg.NodeRef != nil {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeWarning, EventThresholdMet, "Attempting to reclaim %s", plan.Resource)
	}
	if m.reclaimNodeLevel(ctx, plan) {
		klog.InfoS("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", plan.Resource)
		return nil, nil
	}
	klog.InfoS("Eviction manager: must evict pod(s) to reclaim", "resourceName", plan.Resource)
	if len(active) == 0 {
		klog.ErrorS(nil, "Eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return nil, nil
	}
	stats := StatsByUID(summary)
	Rank(plan.Threshold.Signal, active, stats, *m.dedicatedImageFs)
	klog.InfoS("Eviction manager: pods ranked for eviction", "pods", klog.KObjSlice(active))
	for _, t := range act {
		if o := obs[t.Signal]; !o.Time.IsZero() {
			m.cfg.Metrics.EvictionStatsAge.WithLabelValues(string(t.Signal)).Observe(now.Sub(o.Time).Seconds())
		}
	}
	for _, pod := range active {
		if podutil.IsCriticalPod(pod) {
			klog.ErrorS(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod))
			continue
		}
		msg, ann := Message(plan.Resource, pod, stats, act, obs)
		grace := GracePeriod(plan.Threshold, pod, m.cfg.MaxPodGracePeriodSeconds)
		m.recordEvicted(pod, ann, msg)
		klog.InfoS("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "gracePeriod", grace, "message", msg)
		if err := m.cfg.Killer.EvictPod(ctx, pod, grace, EvictedStatus(msg, now)); err != nil {
			klog.ErrorS(err, "Eviction manager: pod failed to evict", "pod", klog.KObj(pod))
		} else {
			klog.InfoS("Eviction manager: pod is evicted successfully", "pod", klog.KObj(pod))
		}
		m.cfg.Metrics.Evictions.WithLabelValues(string(plan.Threshold.Signal)).Inc()
		return []*v1.Pod{pod}, nil
	}
	klog.InfoS("Eviction manager: unable to evict any pods from the node")
	return nil, nil
}

// localStorageEviction evicts, at once (grace period 1 s, as upstream's
// immediate eviction), every active pod over its own local ephemeral
// storage limits. Critical pods are never evicted.
func (m *Manager) localStorageEviction(ctx context.Context, active []*v1.Pod, stats PodStats) []*v1.Pod {
	var evicted []*v1.Pod
	for _, pod := range active {
		ps, ok := stats[pod.UID]
		if !ok {
			continue
		}
		v, over := LocalStorageLimitExceeded(pod, ps, *m.dedicatedImageFs)
		if !over {
			continue
		}
		if podutil.IsCriticalPod(pod) {
			klog.ErrorS(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod), "message", v.Message)
			continue
		}
		m.recordEvicted(pod, nil, v.Message)
		klog.InfoS("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "gracePeriod", immediateGracePeriod, "message", v.Message)
		if err := m.cfg.Killer.EvictPod(ctx, pod, immediateGracePeriod, LocalStorageEvictedStatus(v.Message)); err != nil {
			klog.ErrorS(err, "Eviction manager: pod failed to evict", "pod", klog.KObj(pod))
		} else {
			klog.InfoS("Eviction manager: pod is evicted successfully", "pod", klog.KObj(pod))
		}
		m.cfg.Metrics.Evictions.WithLabelValues(v.Signal).Inc()
		evicted = append(evicted, pod)
	}
	return evicted
}

// immediateGracePeriod is upstream's immediateEvictionGracePeriodSeconds.
const immediateGracePeriod = 1

// EvictedStatus is the status an evicted pod gets: phase Failed, reason
// Evicted, and (as upstream v1.36) the DisruptionTarget condition saying
// the kubelet terminated it.
func EvictedStatus(message string, now time.Time) v1.PodStatus {
	return v1.PodStatus{
		Phase: v1.PodFailed, Reason: Reason, Message: message,
		Conditions: []v1.PodCondition{{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
			Message: message, LastTransitionTime: metav1.NewTime(now),
		}},
	}
}

func (m *Manager) recordEvicted(pod *v1.Pod, ann map[string]string, msg string) {
	if ar, ok := m.cfg.Recorder.(events.AnnotatedRecorder); ok {
		ar.AnnotatedEventf(pod, ann, v1.EventTypeWarning, Reason, "%s", msg)
		return
	}
	m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, Reason, "%s", msg)
}

// reclaimNodeLevel runs the plan's collectors and reports whether the
// thresholds (minimum reclaim included) are all satisfied afterwards.
func (m *Manager) reclaimNodeLevel(ctx context.Context, plan Reclaim) bool {
	ran := false
	if plan.ContainerGC {
		if m.cfg.ContainerGC == nil {
			klog.InfoS("Eviction manager: no container garbage collector, skipping container reclaim", "resourceName", plan.Resource)
		} else {
			ran = true
			if err := m.cfg.ContainerGC.DeleteAllUnusedContainers(ctx); err != nil {
				klog.InfoS("Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", plan.Resource, "err", err)
			}
		}
	}
	if plan.ImageGC {
		if m.cfg.ImageGC == nil {
			klog.InfoS("Eviction manager: no image garbage collector, skipping image reclaim", "resourceName", plan.Resource)
		} else {
			ran = true
			freed, err := m.cfg.ImageGC.DeleteUnusedImages(ctx)
			if err != nil {
				klog.InfoS("Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", plan.Resource, "err", err)
			}
			klog.V(2).InfoS("Eviction manager: deleted unused images", "freedBytes", freed)
		}
	}
	if !ran {
		return false
	}
	summary, err := m.cfg.Summary.Summary(ctx, false)
	if err != nil {
		klog.ErrorS(err, "Eviction manager: failed to get summary stats after resource reclaim")
		return false
	}
	obs := Observe(summary)
	logObservations("observations after resource reclaim", obs)
	return len(Met(m.cfg.Thresholds, obs, true)) == 0
}

// updateNotifier (re)registers the memcg threshold for memory.available
// every notifierRefreshInterval, since the threshold on usage moves with
// the inactive file cache.
func (m *Manager) updateNotifier(ctx context.Context, s *statsapi.Summary, now time.Time) {
	if !m.cfg.KernelMemcgNotification || (!m.notifierUpdated.IsZero() && now.Sub(m.notifierUpdated) < notifierRefreshInterval) {
		return
	}
	m.notifierUpdated = now
	var t *evictionapi.Threshold
	for i := range m.cfg.Thresholds {
		if m.cfg.Thresholds[i].Signal == evictionapi.SignalMemoryAvailable && (t == nil || m.cfg.Thresholds[i].Hard()) {
			t = &m.cfg.Thresholds[i]
		}
	}
	if t == nil {
		return
	}
	usage, ok := MemcgThreshold(*t, s.Node.Memory)
	if !ok {
		return
	}
	if m.notifier != nil {
		m.notifier.Close()
		m.notifier = nil
	}
	n, err := newMemoryNotifier(ctx, m.cfg.MemoryCgroup, usage, func() {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		klog.InfoS("Eviction manager: failed to create memory threshold notifier", "cgroup", m.cfg.MemoryCgroup, "err", err)
		return
	}
	klog.V(3).InfoS("Eviction manager: memory threshold notifier set", "cgroup", m.cfg.MemoryCgroup, "usageThresholdBytes", usage)
	m.notifier = n
}

// MemcgThreshold is the memory usage (as the memory cgroup counts it, page
// cache included) at which memory.available crosses t: capacity minus the
// threshold, plus the inactive file cache usage counts but the working set
// does not.
func MemcgThreshold(t evictionapi.Threshold, m *statsapi.MemoryStats) (int64, bool) {
	if m == nil || m.AvailableBytes == nil || m.WorkingSetBytes == nil || m.UsageBytes == nil {
		return 0, false
	}
	capacity := int64(*m.AvailableBytes + *m.WorkingSetBytes)
	inactiveFile := int64(*m.UsageBytes) - int64(*m.WorkingSetBytes)
	if inactiveFile < 0 {
		inactiveFile = 0
	}
	q := t.Value.Amount(*resourceQuantity(capacity))
	return capacity - q.Value() + inactiveFile, true
}

func equalConditions(a, b []v1.NodeConditionType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func logObservations(prefix string, obs Observations) {
	if !klog.V(3).Enabled() {
		return
	}
	for s, o := range obs {
		klog.V(3).InfoS("Eviction manager:", "log", prefix, "signal", s, "resourceName", evictionapi.ResourceOf(s), "available", o.Available.String(), "capacity", o.Capacity.String(), "time", o.Time)
	}
}

func resourceQuantity(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.BinarySI) }
