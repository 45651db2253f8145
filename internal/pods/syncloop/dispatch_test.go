package syncloop

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// update summarises a worker update as "Type name[ grace=N][ removed]".
func update(u podworkers.Update) string {
	s := "Sync"
	if u.Type == podworkers.Kill {
		s = "Kill"
	}
	s += " " + u.Pod.Name
	if u.GracePeriod != nil {
		s += " grace=" + strconv.FormatInt(*u.GracePeriod, 10)
	}
	if u.Removed {
		s += " removed"
	}
	return s
}

func deleting(p *v1.Pod, grace int64) *v1.Pod {
	d := p.DeepCopy()
	now := metav1.Now()
	d.DeletionTimestamp = &now
	d.DeletionGracePeriodSeconds = &grace
	return d
}

func op(o sources.Operation, pods ...*v1.Pod) sources.PodUpdate {
	return sources.PodUpdate{Op: o, Pods: pods, Source: "api"}
}

// TestDispatcherPodUpdates: what each config operation does to the desired
// pods and the pod workers, as upstream's HandlePodAdditions, Updates,
// Removes and Reconcile do.
func TestDispatcherPodUpdates(t *testing.T) {
	a := mkPod("a", "a", nil)
	a2 := a.DeepCopy()
	a2.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox:2"}}
	b := mkPod("b", "b", nil)
	cases := []struct {
		name        string
		updates     []sources.PodUpdate
		wantWorkers []string
		wantPods    []string // names in the pod manager
		// wantLatest, when set, is the spec image the manager holds for "a".
		wantLatest string
	}{
		{name: "ADD: desired and synced", updates: []sources.PodUpdate{op(sources.ADD, a)},
			wantWorkers: []string{"Sync a"}, wantPods: []string{"a"}},
		{name: "ADD of several pods at once", updates: []sources.PodUpdate{op(sources.ADD, a, b)},
			wantWorkers: []string{"Sync a", "Sync b"}, wantPods: []string{"a", "b"}},
		{name: "UPDATE of a known pod: the new spec is synced", updates: []sources.PodUpdate{op(sources.ADD, a), op(sources.UPDATE, a2)},
			wantWorkers: []string{"Sync a", "Sync a"}, wantPods: []string{"a"}, wantLatest: "busybox:2"},
		{name: "UPDATE of a pod never added is ignored", updates: []sources.PodUpdate{op(sources.UPDATE, a)}},
		{name: "DELETE: killed within the deletion grace period, kept until terminated",
			updates:     []sources.PodUpdate{op(sources.ADD, a), op(sources.DELETE, deleting(a, 12))},
			wantWorkers: []string{"Sync a", "Kill a grace=12"}, wantPods: []string{"a"}},
		{name: "DELETE of a pod never added still stops whatever runs of it",
			updates: []sources.PodUpdate{op(sources.DELETE, deleting(a, 0))}, wantWorkers: []string{"Kill a grace=0"}},
		{name: "REMOVE: forgotten and killed as removed", updates: []sources.PodUpdate{op(sources.ADD, a, b), op(sources.REMOVE, a)},
			wantWorkers: []string{"Sync a", "Sync b", "Kill a removed"}, wantPods: []string{"b"}},
		{name: "RECONCILE of a pod never added is ignored", updates: []sources.PodUpdate{op(sources.RECONCILE, a)}},
		{name: "RECONCILE without a readiness change updates the desired pod quietly",
			updates: []sources.PodUpdate{op(sources.ADD, a), op(sources.RECONCILE, a2)}, wantWorkers: []string{"Sync a"},
			wantPods: []string{"a"}, wantLatest: "busybox:2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
			d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: noRuntime{}})
			for _, u := range tc.updates {
				d.HandlePodUpdate(context.Background(), u)
			}
			var got []string
			for _, u := range workers.updates {
				got = append(got, update(u))
			}
			if !reflect.DeepEqual(got, tc.wantWorkers) {
				t.Errorf("worker updates %v, want %v", got, tc.wantWorkers)
			}
			var names []string
			for _, p := range pods.List() {
				names = append(names, p.Name)
			}
			if !reflect.DeepEqual(names, tc.wantPods) {
				t.Errorf("desired pods %v, want %v", names, tc.wantPods)
			}
			if tc.wantLatest != "" {
				if p, _ := pods.Get("a"); len(p.Spec.Containers) == 0 || p.Spec.Containers[0].Image != tc.wantLatest {
					t.Errorf("desired pod a is %+v, want image %s", p.Spec, tc.wantLatest)
				}
			}
		})
	}
}

// Admission counts only pods that hold resources: a terminating or
// terminated pod's place can be taken; a pod already admitted is never
// admitted again when a source sends it anew.
func TestDispatcherAdmissionCountsActivePods(t *testing.T) {
	pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
	var seen [][]string
	d := NewDispatcher(DispatcherConfig{
		Pods: pods, Workers: workers, Runtime: noRuntime{},
		Admit: func(p *v1.Pod, active []*v1.Pod) (bool, string, string) {
			var names []string
			for _, a := range active {
				names = append(names, a.Name)
			}
			seen = append(seen, names)
			return len(active) < 1, "OutOfpods", "no room"
		},
	})
	ctx := context.Background()
	d.HandlePodUpdate(ctx, op(sources.ADD, mkPod("a", "a", nil)))
	workers.states["a"] = podworkers.PodState{State: podworkers.Terminating}
	d.HandlePodUpdate(ctx, op(sources.ADD, mkPod("b", "b", nil)))
	d.HandlePodUpdate(ctx, op(sources.ADD, mkPod("a", "a", nil))) // a source replays a: no second admission
	want := [][]string{nil, nil}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("admission saw active pods %v, want %v", seen, want)
	}
	if len(workers.updates) != 3 {
		t.Fatalf("worker updates %v: a, b (a's place freed) and a again", workers.updates)
	}
}

type statusChanges struct{ uids []types.UID }

func (s *statusChanges) changed(uid types.UID) { s.uids = append(s.uids, uid) }

// Mirror pods are indexed, never run; what happens to one wakes its static
// pod: a new mirror gets the static pod's status at once, a deleted or
// removed one makes the static pod sync (which re-creates it).
func TestDispatcherMirrorLifecycle(t *testing.T) {
	static := mkPod("s", "etcd-n", map[string]string{podutil.ConfigSourceAnnotationKey: "file", podutil.ConfigHashAnnotationKey: "s"})
	mirror := mkPod("m", "etcd-n", map[string]string{podutil.ConfigMirrorAnnotationKey: "s"})
	cases := []struct {
		name        string
		withStatic  bool
		updates     []sources.PodUpdate
		deleteErr   error
		wantSynced  []types.UID
		wantStatus  []types.UID
		wantDeleted []string
		wantIndexed bool
	}{
		{name: "a new mirror: the static pod's status is written again", withStatic: true,
			updates: []sources.PodUpdate{op(sources.ADD, mirror)}, wantStatus: []types.UID{"s"}, wantIndexed: true},
		{name: "a mirror removed from the API: the static pod syncs", withStatic: true,
			updates: []sources.PodUpdate{op(sources.ADD, mirror), op(sources.REMOVE, mirror)}, wantStatus: []types.UID{"s"}, wantSynced: []types.UID{"s"}},
		{name: "a mirror being deleted: deleted now, the static pod syncs", withStatic: true,
			updates:     []sources.PodUpdate{op(sources.DELETE, deleting(mirror, 30))},
			wantDeleted: []string{"etcd-n"}, wantSynced: []types.UID{"s"}, wantIndexed: true},
		{name: "a mirror that cannot be deleted: the static pod still syncs", withStatic: true, deleteErr: errors.New("forbidden"),
			updates:     []sources.PodUpdate{op(sources.DELETE, deleting(mirror, 30))},
			wantDeleted: []string{"etcd-n"}, wantSynced: []types.UID{"s"}, wantIndexed: true},
		{name: "a mirror without its static pod: only indexed",
			updates: []sources.PodUpdate{op(sources.ADD, mirror), op(sources.UPDATE, mirror)}, wantIndexed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
			mirrors, status := &fakeMirrors{err: tc.deleteErr}, &statusChanges{}
			d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: noRuntime{}, Mirrors: mirrors, StatusChanged: status.changed})
			ctx := context.Background()
			if tc.withStatic {
				d.HandlePodUpdate(ctx, op(sources.ADD, static))
				workers.updates = nil
			}
			for _, u := range tc.updates {
				d.HandlePodUpdate(ctx, u)
			}
			if len(workers.updates) != 0 {
				t.Errorf("a mirror pod reached the workers: %v", workers.updates)
			}
			if !reflect.DeepEqual(workers.synced, tc.wantSynced) || !reflect.DeepEqual(status.uids, tc.wantStatus) ||
				!reflect.DeepEqual(mirrors.deleted, tc.wantDeleted) {
				t.Errorf("synced %v status %v deleted %v; want %v %v %v", workers.synced, status.uids, mirrors.deleted,
					tc.wantSynced, tc.wantStatus, tc.wantDeleted)
			}
			if _, indexed := pods.Mirror(static); indexed != tc.wantIndexed {
				t.Errorf("mirror indexed %v, want %v", indexed, tc.wantIndexed)
			}
		})
	}
}

// PLEG events and sync ticks go straight to the pod workers.
func TestDispatcherEventsAndTicks(t *testing.T) {
	workers := &fakeWorkers{states: map[types.UID]podworkers.PodState{}, known: map[types.UID]bool{"a": true}}
	d := NewDispatcher(DispatcherConfig{Pods: podmanager.NewManager(), Workers: workers, Runtime: noRuntime{}})
	ctx := context.Background()
	d.HandlePLEGEvent(ctx, pleg.Event{ID: "a", Type: pleg.ContainerDied})
	d.HandlePLEGEvent(ctx, pleg.Event{ID: "unknown", Type: pleg.ContainerStarted})
	d.HandleSyncTick(ctx)
	d.HandleSyncTick(ctx)
	if want := []types.UID{"a", "unknown"}; !reflect.DeepEqual(workers.synced, want) || workers.due != 2 {
		t.Fatalf("synced %v due %d; want %v and 2", workers.synced, workers.due, want)
	}
}
