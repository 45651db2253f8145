package sources

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// podChanges is what one snapshot changed relative to the previous one.
// Each list is sorted by namespace/name then UID.
type podChanges struct {
	removes    []*v1.Pod
	adds       []*v1.Pod
	updates    []*v1.Pod
	deletes    []*v1.Pod
	reconciles []*v1.Pod
}

// podUpdates returns one PodUpdate per non-empty operation, in the order
// REMOVE, ADD, UPDATE, DELETE, RECONCILE. Pods are deep copies.
func (c podChanges) podUpdates(source string) []PodUpdate {
	var out []PodUpdate
	for _, group := range []struct {
		op   Operation
		pods []*v1.Pod
	}{
		{REMOVE, c.removes},
		{ADD, c.adds},
		{UPDATE, c.updates},
		{DELETE, c.deletes},
		{RECONCILE, c.reconciles},
	} {
		if len(group.pods) == 0 {
			continue
		}
		pods := make([]*v1.Pod, 0, len(group.pods))
		for _, p := range group.pods {
			pods = append(pods, p.DeepCopy())
		}
		out = append(out, PodUpdate{Pods: pods, Op: group.op, Source: source})
	}
	return out
}

// diff compares two snapshots of one source keyed by UID:
//   - a UID only in next is an ADD; a UID only in prev is a REMOVE;
//   - a pod whose spec, labels, non-local annotations, generation or
//     deletion fields changed is a DELETE when next carries a deletion
//     timestamp and an UPDATE otherwise;
//   - a pod where only the status changed is a RECONCILE.
//
// ADD, UPDATE, DELETE and RECONCILE carry the pod from next; REMOVE carries
// the pod from prev.
func diff(prev, next map[types.UID]*v1.Pod) podChanges {
	var c podChanges
	for uid, newPod := range next {
		oldPod, found := prev[uid]
		switch {
		case !found:
			c.adds = append(c.adds, newPod)
		case podsDifferSemantically(oldPod, newPod):
			if newPod.DeletionTimestamp != nil {
				c.deletes = append(c.deletes, newPod)
			} else {
				c.updates = append(c.updates, newPod)
			}
		case !apiequality.Semantic.DeepEqual(oldPod.Status, newPod.Status):
			c.reconciles = append(c.reconciles, newPod)
		}
	}
	for uid, oldPod := range prev {
		if _, found := next[uid]; !found {
			c.removes = append(c.removes, oldPod)
		}
	}
	for _, list := range [][]*v1.Pod{c.removes, c.adds, c.updates, c.deletes, c.reconciles} {
		sortPods(list)
	}
	return c
}

// podsDifferSemantically reports a change the pod's consumer must act on.
func podsDifferSemantically(a, b *v1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!apiequality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!apiequality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!apiequality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) ||
		a.Generation != b.Generation ||
		!annotationsEqualIgnoringLocal(a.Annotations, b.Annotations)
}

// isLocalAnnotation reports annotations the kubelet itself maintains; they
// never make a pod "changed".
func isLocalAnnotation(key string) bool {
	switch key {
	case podutil.ConfigSourceAnnotationKey, podutil.ConfigMirrorAnnotationKey, podutil.ConfigFirstSeenAnnotationKey:
		return true
	}
	return false
}

func annotationsEqualIgnoringLocal(a, b map[string]string) bool {
	for k, v := range a {
		if isLocalAnnotation(k) {
			continue
		}
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	for k := range b {
		if isLocalAnnotation(k) {
			continue
		}
		if _, ok := a[k]; !ok {
			return false
		}
	}
	return true
}

func sortPods(pods []*v1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		if pods[i].Name != pods[j].Name {
			return pods[i].Name < pods[j].Name
		}
		return pods[i].UID < pods[j].UID
	})
}

// rejectedPod is a pod a snapshot carried but the mux refused.
type rejectedPod struct {
	pod    *v1.Pod
	reason string
}

// indexSnapshot keys a source's snapshot by UID. The first pod of a given
// UID or namespace/name wins; later ones are rejected, as are pods without
// a UID. Every kept pod is a deep copy annotated with the source, and keeps
// the first-seen time of its previous version (or gets now if it is new).
func indexSnapshot(source string, snapshot []*v1.Pod, prev map[types.UID]*v1.Pod, now time.Time) (map[types.UID]*v1.Pod, []rejectedPod) {
	next := make(map[types.UID]*v1.Pod, len(snapshot))
	names := make(map[string]types.UID, len(snapshot))
	var rejected []rejectedPod
	for _, in := range snapshot {
		if in == nil {
			continue
		}
		fullName := in.Namespace + "/" + in.Name
		switch {
		case in.UID == "":
			rejected = append(rejected, rejectedPod{in, "pod has no UID"})
			continue
		case next[in.UID] != nil:
			rejected = append(rejected, rejectedPod{in, fmt.Sprintf("duplicate UID %q", in.UID)})
			continue
		case names[fullName] != "":
			rejected = append(rejected, rejectedPod{in, fmt.Sprintf("duplicate pod name %q (kept UID %q)", fullName, names[fullName])})
			continue
		}
		pod := in.DeepCopy()
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[podutil.ConfigSourceAnnotationKey] = source
		if old, ok := prev[pod.UID]; ok && old.Annotations[podutil.ConfigFirstSeenAnnotationKey] != "" {
			pod.Annotations[podutil.ConfigFirstSeenAnnotationKey] = old.Annotations[podutil.ConfigFirstSeenAnnotationKey]
		} else if pod.Annotations[podutil.ConfigFirstSeenAnnotationKey] == "" {
			pod.Annotations[podutil.ConfigFirstSeenAnnotationKey] = now.Format(time.RFC3339Nano)
		}
		next[pod.UID] = pod
		names[fullName] = pod.UID
	}
	return next, rejected
}
