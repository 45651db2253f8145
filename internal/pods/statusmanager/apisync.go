package statusmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/kubeclient/smp"
)

// Target is the API object a pod's status is written to: the pod itself,
// or for a static pod its mirror pod.
type Target struct {
	Namespace, Name string
	UID             types.UID
}

// APISyncConfig configures writing statuses to the API server.
type APISyncConfig struct {
	Client kubeclient.Interface // required
	Clock  clock.WithTicker     // required
	// Target maps a pod UID to the object to write (false: none yet, such
	// as a static pod whose mirror pod does not exist yet).
	Target func(uid types.UID) (Target, bool)
	// Terminated reports whether the kubelet has stopped every container of
	// the pod for good; only then is a pod marked for deletion deleted.
	Terminated func(uid types.UID) bool
	// ResyncPeriod re-sends every status (10 s upstream).
	ResyncPeriod time.Duration
	// Observed returns the API object a pod's status goes to as the last
	// watch event showed it (Targets.Observed). The periodic resync then
	// writes only the pods whose status the API does not hold yet (or that
	// wait for their final delete), as upstream's needsReconcile, instead
	// of reading every pod back from the API server. nil resyncs every
	// pod. May be nil.
	Observed func(uid types.UID) (*v1.Pod, bool)
	// WatchOpenSince tells since when the watch feeding Observed is open
	// (sources.WatchState.OpenSince); false while none is. A resync trusts
	// Observed only when that watch was already open at the resync before:
	// while the API server is away and until the watch is back (its
	// reflector backs off up to a minute), others' writes, such as the
	// node controller marking the pods not Ready, are missing from the
	// watched copies, and every pod is read back instead. nil trusts
	// Observed always.
	WatchOpenSince func() (time.Time, bool)
	// Rebuild asks for a pod's status to be generated again: its stored
	// status was built before the API object it goes to was known (a
	// static pod synced before its mirror pod arrived). May be nil.
	Rebuild func(uid types.UID)
}

// kubeletConditions are the pod conditions the kubelet owns; others (set
// by controllers, readiness gates) are kept as the API has them.
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled: true, v1.PodReady: true, v1.PodInitialized: true,
	v1.ContainersReady: true, v1.PodReadyToStartContainers: true,
	v1.PodResizePending: true, v1.PodResizeInProgress: true,
}

// MergeStatus returns the status to write given what the API has and what
// the kubelet computed; it is pure. A terminal phase never goes back.
func MergeStatus(api, kubelet v1.PodStatus) v1.PodStatus {
	out := *kubelet.DeepCopy()
	var conds []v1.PodCondition
	for _, c := range kubelet.Conditions {
		if kubeletConditions[c.Type] {
			conds = append(conds, c)
		}
	}
	// DisruptionTarget is shared: the kubelet's (an eviction) replaces the
	// API's while the pod moves to a terminal phase, as upstream.
	terminating := api.Phase != v1.PodSucceeded && api.Phase != v1.PodFailed && (kubelet.Phase == v1.PodSucceeded || kubelet.Phase == v1.PodFailed)
	shared := map[v1.PodConditionType]bool{}
	if terminating {
		for _, c := range kubelet.Conditions {
			if c.Type == v1.DisruptionTarget {
				conds = append(conds, c)
				shared[c.Type] = true
			}
		}
	}
	for _, c := range api.Conditions {
		if !kubeletConditions[c.Type] && !shared[c.Type] {
			conds = append(conds, c)
		}
	}
	out.Conditions = conds
	if (api.Phase == v1.PodSucceeded || api.Phase == v1.PodFailed) && out.Phase != api.Phase {
		out.Phase, out.Reason, out.Message = api.Phase, api.Reason, api.Message
	}
	if out.NominatedNodeName == "" {
		out.NominatedNodeName = api.NominatedNodeName
	}
	return out
}

// statusPatch is a strategic merge patch from old to new status that also
// carries the pod's UID, so the API server refuses it for another pod.
// Empty reports that the API would store the same status (they differ only
// below what it keeps, such as sub-second times).
func statusPatch(uid types.UID, old, new v1.PodStatus) (patch []byte, empty bool, err error) {
	oldData, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, false, err
	}
	newData, err := json.Marshal(v1.Pod{Status: new})
	if err != nil {
		return nil, false, err
	}
	patch, err = smp.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, false, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, false, err
	}
	empty = len(m) == 0
	m["metadata"] = map[string]any{"uid": uid}
	patch, err = json.Marshal(m)
	return patch, empty, err
}

// retryPeriod is how often, while writes fail (the API server is away),
// one failed status is tried again; once one goes through, all do. The
// statuses so reach the API within about a second of its return instead of
// at the next resync.
const retryPeriod = time.Second

// syncWorkers is how many pods' statuses are written at once. One pod's
// status is never written by two at once; many pods starting or stopping
// together do not queue behind one another's round trips (a GET and a
// PATCH, then the DELETE of a terminated pod), which the client's QPS
// limit bounds anyway.
const syncWorkers = 8

// RunAPISync writes changed statuses to the API server until ctx ends. It
// also completes the deletion handshake: a pod the API marked for deletion
// is deleted (grace 0) once the kubelet has terminated it.
func (m *Manager) RunAPISync(ctx context.Context, cfg APISyncConfig) {
	tick := cfg.Clock.NewTicker(cfg.ResyncPeriod)
	defer tick.Stop()
	lastTick := cfg.Clock.Now()
	q := newSyncQueue()
	type result struct {
		uid types.UID
		err error
	}
	// Buffered for every sync that can be in flight: those still running
	// when ctx ends finish without a reader.
	done := make(chan result, syncWorkers)
	running := 0
	failed := map[types.UID]bool{}
	var retry clock.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		for running < syncWorkers {
			uid, ok := q.next()
			if !ok {
				break
			}
			running++
			go func() { done <- result{uid, m.syncOne(ctx, cfg, uid)} }()
		}
		if len(failed) > 0 && retry == nil {
			retry = cfg.Clock.NewTimer(retryPeriod)
		}
		var retryC <-chan time.Time
		if retry != nil {
			retryC = retry.C()
		}
		select {
		case <-ctx.Done():
			return
		case uid := <-m.dirty:
			q.add(uid)
		case r := <-done:
			running--
			q.done(r.uid)
			if r.err != nil {
				failed[r.uid] = true
				break
			}
			delete(failed, r.uid)
			// The API answers again: every status that failed goes now.
			for uid := range failed {
				q.add(uid)
			}
		case now := <-tick.C():
			trust := watchTrusted(cfg.WatchOpenSince, lastTick)
			lastTick = now
			for _, uid := range m.uids() {
				if !trust || m.needsResync(cfg, uid) {
					q.add(uid)
				}
			}
		case <-retryC:
			retry = nil
			for uid := range failed {
				q.add(uid) // one at a time while writes still fail
				break
			}
		}
	}
}

// syncQueue orders the pods whose status is to be written: each UID at
// most once in the queue, and one asked for again while its write is in
// flight is queued once that write is done. Only RunAPISync's goroutine
// uses it.
type syncQueue struct {
	order    []types.UID
	queued   map[types.UID]bool
	inFlight map[types.UID]bool
	again    map[types.UID]bool
}

func newSyncQueue() *syncQueue {
	return &syncQueue{queued: map[types.UID]bool{}, inFlight: map[types.UID]bool{}, again: map[types.UID]bool{}}
}

func (q *syncQueue) add(uid types.UID) {
	switch {
	case q.inFlight[uid]:
		q.again[uid] = true
	case !q.queued[uid]:
		q.queued[uid] = true
		q.order = append(q.order, uid)
	}
}

// next takes the first queued UID and marks it in flight.
func (q *syncQueue) next() (types.UID, bool) {
	if len(q.order) == 0 {
		return "", false
	}
	uid := q.order[0]
	q.order = q.order[1:]
	delete(q.queued, uid)
	q.inFlight[uid] = true
	return uid, true
}

// done ends uid's write, queueing it again if it was asked for meanwhile.
func (q *syncQueue) done(uid types.UID) {
	delete(q.inFlight, uid)
	if q.again[uid] {
		delete(q.again, uid)
		q.add(uid)
	}
}

// watchTrusted reports whether a resync may judge from the watched pods:
// the watch (openSince; nil means always open) has been open since before
// the previous resync at prev, so what the API held then has reached them.
func watchTrusted(openSince func() (time.Time, bool), prev time.Time) bool {
	if openSince == nil {
		return true
	}
	since, open := openSince()
	return open && !since.After(prev)
}

// needsResync reports whether the periodic resync should write uid's
// status: always without cfg.Observed, else as NeedsResync decides.
func (m *Manager) needsResync(cfg APISyncConfig, uid types.UID) bool {
	if cfg.Observed == nil {
		return true
	}
	st, ok := m.Lookup(uid)
	if !ok {
		return false
	}
	obj, ok := cfg.Observed(uid)
	if !ok {
		// No object to write to (yet); syncOne would do nothing either.
		return false
	}
	terminated := cfg.Terminated != nil && cfg.Terminated(uid)
	return NeedsResync(st, obj, terminated)
}

// NeedsResync decides, as upstream's status manager does on its periodic
// sync (needsReconcile), whether a pod's stored status st has to be
// written to obj, the API object as last watched: when st was built on
// another object (it is rebuilt first), when the status the API holds is
// not what a write would leave there (the same test as the write's: an
// empty patch, so sub-second times the API does not keep do not count),
// or when the object is marked for deletion and the kubelet has
// terminated the pod (the final delete). It is pure.
func NeedsResync(st Stored, obj *v1.Pod, terminated bool) bool {
	switch {
	case st.Basis != obj.UID:
		return true
	case obj.DeletionTimestamp != nil && terminated:
		return true
	}
	merged := MergeStatus(obj.Status, st.Status)
	if equalStatus(obj.Status, merged) {
		return false
	}
	_, empty, err := statusPatch(obj.UID, obj.Status, merged)
	return err != nil || !empty
}

func (m *Manager) uids() []types.UID {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]types.UID, 0, len(m.statuses))
	for uid := range m.statuses {
		out = append(out, uid)
	}
	return out
}

// syncOne writes uid's status if it has one to write, and returns the
// error of a write that failed.
func (m *Manager) syncOne(ctx context.Context, cfg APISyncConfig, uid types.UID) error {
	st, ok := m.Lookup(uid)
	if !ok {
		return nil
	}
	target, ok := cfg.Target(uid)
	if !ok {
		return nil
	}
	if st.Basis != target.UID {
		// Built without what the API holds for this object (its start
		// time, the readiness it reported): writing it could move the
		// object's conditions backwards. A new one is built first.
		klog.V(3).InfoS("Pod status was built before its API object was known, rebuilding it", "pod", klog.KRef(target.Namespace, target.Name), "podUID", uid)
		if cfg.Rebuild != nil {
			cfg.Rebuild(uid)
		}
		return nil
	}
	err := syncStatus(ctx, cfg, uid, target, st.Status)
	if err != nil {
		klog.V(2).InfoS("Failed to update pod status, will retry", "pod", klog.KRef(target.Namespace, target.Name), "err", err)
	}
	return err
}

func syncStatus(ctx context.Context, cfg APISyncConfig, uid types.UID, target Target, st v1.PodStatus) error {
	pods := cfg.Client.CoreV1().Pods(target.Namespace)
	apiPod, err := pods.Get(ctx, target.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod: %w", err)
	}
	if apiPod.UID != target.UID {
		return nil // a different pod of the same name
	}
	merged := MergeStatus(apiPod.Status, st)
	if !equalStatus(apiPod.Status, merged) {
		patch, empty, err := statusPatch(apiPod.UID, apiPod.Status, merged)
		if err != nil {
			return fmt.Errorf("build status patch: %w", err)
		}
		if !empty {
			if _, err := pods.Patch(ctx, target.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
				return fmt.Errorf("patch status: %w", err)
			}
			klog.V(3).InfoS("Patched pod status", "pod", klog.KObj(apiPod), "phase", merged.Phase)
		}
	}
	if apiPod.DeletionTimestamp != nil && cfg.Terminated != nil && cfg.Terminated(uid) {
		zero := int64(0)
		err := pods.Delete(ctx, target.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &apiPod.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete terminated pod: %w", err)
		}
		klog.V(2).InfoS("Pod fully terminated and removed from the API", "pod", klog.KObj(apiPod))
	}
	return nil
}
