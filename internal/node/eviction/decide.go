package eviction

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

// State is what the manager remembers between two evaluations. The zero
// value is the state before the first one.
type State struct {
	// FirstObserved is when each currently met threshold (grace periods
	// aside) was first seen met.
	FirstObserved map[evictionapi.Key]firstObserved
	// ConditionLastObserved is when each node condition was last backed by
	// a met threshold.
	ConditionLastObserved map[v1.NodeConditionType]time.Time
	// Met are the thresholds past their grace period and not yet resolved
	// (their minimum reclaim not yet available).
	Met []evictionapi.Threshold
	// Conditions are the node conditions to report, sorted.
	Conditions []v1.NodeConditionType
	// Last are the observations of the last evaluation.
	Last Observations
}

type firstObserved struct {
	threshold evictionapi.Threshold
	at        time.Time
}

// Met returns the thresholds whose signal is below their value; with
// enforceMinReclaim, below value plus minimum reclaim. Thresholds without
// an observation are left out.
func Met(thresholds []evictionapi.Threshold, obs Observations, enforceMinReclaim bool) []evictionapi.Threshold {
	var out []evictionapi.Threshold
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.Amount(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q.Add(t.MinReclaim.Amount(o.Capacity))
		}
		if q.Cmp(o.Available) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// Evaluate is one step of the manager's decision: from the configured
// thresholds, the previous state and fresh observations it returns the
// next state and the thresholds to act on now (met past their grace
// period, with stats newer than last time), most urgent first.
func Evaluate(thresholds []evictionapi.Threshold, prev State, obs Observations, now time.Time, transitionPeriod time.Duration) (State, []evictionapi.Threshold) {
	met := Met(thresholds, obs, false)
	if len(prev.Met) > 0 {
		met = merge(met, Met(prev.Met, obs, true))
	}
	next := State{
		FirstObserved:         map[evictionapi.Key]firstObserved{},
		ConditionLastObserved: map[v1.NodeConditionType]time.Time{},
		Last:                  obs,
	}
	for _, t := range met {
		f, ok := prev.FirstObserved[t.Key()]
		if !ok {
			f = firstObserved{threshold: t, at: now}
		}
		next.FirstObserved[t.Key()] = f
	}
	for c, at := range prev.ConditionLastObserved {
		next.ConditionLastObserved[c] = at
	}
	for _, c := range conditionsOf(met) {
		next.ConditionLastObserved[c] = now
	}
	for c, at := range next.ConditionLastObserved {
		if now.Sub(at) < transitionPeriod {
			next.Conditions = append(next.Conditions, c)
		}
	}
	sort.Slice(next.Conditions, func(i, j int) bool { return next.Conditions[i] < next.Conditions[j] })
	for _, t := range met {
		if f := next.FirstObserved[t.Key()]; now.Sub(f.at) >= t.GracePeriod {
			next.Met = append(next.Met, t)
		}
	}
	var act []evictionapi.Threshold
	for _, t := range next.Met {
		o := obs[t.Signal]
		last, seen := prev.Last[t.Signal]
		if !seen || o.Time.IsZero() || o.Time.After(last.Time) {
			act = append(act, t)
		}
	}
	sort.SliceStable(act, func(i, j int) bool { return urgency(act[i]) < urgency(act[j]) })
	return next, act
}

// urgency orders thresholds as upstream: memory first, then the others
// that have a resource to reclaim.
func urgency(t evictionapi.Threshold) int {
	switch {
	case evictionapi.ResourceOf(t.Signal) == v1.ResourceMemory:
		return 0
	case evictionapi.ResourceOf(t.Signal) != "":
		return 1
	}
	return 2
}

// conditionsOf returns the node conditions met thresholds imply, once each.
func conditionsOf(ts []evictionapi.Threshold) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	seen := map[v1.NodeConditionType]bool{}
	for _, t := range ts {
		if c, ok := signalCondition[t.Signal]; ok && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func merge(a, b []evictionapi.Threshold) []evictionapi.Threshold {
	out := append([]evictionapi.Threshold{}, a...)
	for _, t := range b {
		dup := false
		for _, o := range out {
			if o.Signal == t.Signal && o.GracePeriod == t.GracePeriod && o.Value.Equal(t.Value) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// HasCondition reports whether c is among conds.
func HasCondition(conds []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range conds {
		if x == c {
			return true
		}
	}
	return false
}

// Reclaim names what the manager does for the most urgent threshold:
// first the node-level reclaimers (in order), then, if the thresholds are
// still met, a pod eviction.
type Reclaim struct {
	Threshold evictionapi.Threshold
	Resource  v1.ResourceName
	// ContainerGC and ImageGC: delete dead containers, then unused images.
	ContainerGC, ImageGC bool
}

// PlanReclaim picks the first threshold with a resource to reclaim (act
// must be sorted by Evaluate) and the node-level reclaimers for it: with a
// dedicated image filesystem, imagefs pressure collects containers and
// images and nodefs pressure nothing (its usage is logs and volumes);
// with one shared filesystem both collect containers and images. Memory
// and PID pressure have no node-level reclaim.
func PlanReclaim(act []evictionapi.Threshold, dedicatedImageFs bool) (Reclaim, bool) {
	for _, t := range act {
		res := evictionapi.ResourceOf(t.Signal)
		if res == "" {
			continue
		}
		r := Reclaim{Threshold: t, Resource: res}
		switch t.Signal {
		case evictionapi.SignalImageFsAvailable, evictionapi.SignalImageFsInodesFree:
			r.ContainerGC, r.ImageGC = true, true
		case evictionapi.SignalNodeFsAvailable, evictionapi.SignalNodeFsInodesFree:
			r.ContainerGC, r.ImageGC = !dedicatedImageFs, !dedicatedImageFs
		}
		return r, true
	}
	return Reclaim{}, false
}

// signalCondition is the node condition a met threshold of the signal sets.
var signalCondition = map[evictionapi.Signal]v1.NodeConditionType{
	evictionapi.SignalMemoryAvailable:            v1.NodeMemoryPressure,
	evictionapi.SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
	evictionapi.SignalNodeFsAvailable:            v1.NodeDiskPressure,
	evictionapi.SignalNodeFsInodesFree:           v1.NodeDiskPressure,
	evictionapi.SignalImageFsAvailable:           v1.NodeDiskPressure,
	evictionapi.SignalImageFsInodesFree:          v1.NodeDiskPressure,
	evictionapi.SignalContainerFsAvailable:       v1.NodeDiskPressure,
	evictionapi.SignalContainerFsInodesFree:      v1.NodeDiskPressure,
	evictionapi.SignalPIDAvailable:               v1.NodePIDPressure,
}
