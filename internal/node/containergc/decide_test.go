package containergc

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func dead(id string, uid types.UID, name string, ageMin int) Container {
	return Container{ID: id, PodUID: uid, Name: name, SandboxID: "sb-" + string(uid), CreatedAt: t0.Add(-time.Duration(ageMin) * time.Minute)}
}

func running(id string, uid types.UID, name string, ageMin int) Container {
	c := dead(id, uid, name, ageMin)
	c.Running = true
	return c
}

func ids(cs []Container) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	sort.Strings(out)
	return out
}

func sbIDs(ss []Sandbox) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	sort.Strings(out)
	return out
}

func TestDecideContainers(t *testing.T) {
	deleted := map[types.UID]bool{"gone": true}
	terminated := map[types.UID]bool{"gone": true, "done": true}
	tests := []struct {
		name       string
		policy     Policy
		containers []Container
		notReady   bool
		evictAll   bool
		want       []string
	}{
		{name: "default keeps the newest dead instance per container", policy: DefaultPolicy,
			containers: []Container{running("a4", "p", "app", 1), dead("a3", "p", "app", 2), dead("a2", "p", "app", 3), dead("a1", "p", "app", 4), dead("b1", "p", "side", 5)},
			want:       []string{"a1", "a2"}},
		{name: "maxPerPodContainer 2", policy: Policy{MaxPerPodContainer: 2, MaxContainers: -1},
			containers: []Container{dead("a3", "p", "app", 2), dead("a2", "p", "app", 3), dead("a1", "p", "app", 4)},
			want:       []string{"a1"}},
		{name: "negative maxPerPodContainer keeps all", policy: Policy{MaxPerPodContainer: -1, MaxContainers: -1},
			containers: []Container{dead("a3", "p", "app", 2), dead("a2", "p", "app", 3), dead("a1", "p", "app", 4)},
			want:       []string{}},
		{name: "younger than minAge are kept and not counted", policy: Policy{MinAge: 150 * time.Second, MaxPerPodContainer: 1, MaxContainers: -1},
			containers: []Container{dead("a3", "p", "app", 2), dead("a2", "p", "app", 3), dead("a1", "p", "app", 4)},
			want:       []string{"a1"}},
		{name: "every dead container of a deleted pod goes, running ones stay", policy: DefaultPolicy,
			containers: []Container{dead("g1", "gone", "app", 2), running("g2", "gone", "side", 2), dead("a1", "p", "app", 4)},
			want:       []string{"g1"}},
		{name: "deleted pods wait for all sources", policy: DefaultPolicy, notReady: true,
			containers: []Container{dead("g1", "gone", "app", 2), dead("g0", "gone", "app", 3)},
			want:       []string{"g0"}},
		{name: "eviction also empties terminated pods", policy: DefaultPolicy, evictAll: true,
			containers: []Container{dead("d1", "done", "app", 2), dead("a1", "p", "app", 4)},
			want:       []string{"d1"}},
		{name: "maxContainers shares the budget, then oldest first", policy: Policy{MaxPerPodContainer: -1, MaxContainers: 3},
			containers: []Container{
				dead("a3", "p", "app", 1), dead("a2", "p", "app", 3), dead("a1", "p", "app", 5),
				dead("b3", "q", "app", 2), dead("b2", "q", "app", 4), dead("b1", "q", "app", 6)},
			// share 3/2 = 1 each leaves a3 and b3 (2 <= 3).
			want: []string{"a1", "a2", "b1", "b2"}},
		{name: "maxContainers 0 removes every dead container", policy: Policy{MaxPerPodContainer: 1, MaxContainers: 0},
			containers: []Container{dead("a1", "p", "app", 1), dead("b1", "q", "app", 2), running("c1", "q", "side", 1)},
			want:       []string{"a1", "b1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Decide(Input{
				Policy: tt.policy, Now: t0, Containers: tt.containers, AllSourcesReady: !tt.notReady, EvictNonDeletedPods: tt.evictAll,
				ContentRemovable: func(uid types.UID) bool { return deleted[uid] },
				RuntimeRemovable: func(uid types.UID) bool { return terminated[uid] },
			})
			if got := ids(plan.Containers); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("removed %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecideSandboxes(t *testing.T) {
	sb := func(id string, uid types.UID, ready bool, ageMin int) Sandbox {
		return Sandbox{ID: id, PodUID: uid, Ready: ready, CreatedAt: t0.Add(-time.Duration(ageMin) * time.Minute)}
	}
	in := Input{
		Policy: DefaultPolicy, Now: t0, AllSourcesReady: true,
		Sandboxes: []Sandbox{
			sb("p-new", "p", false, 1), sb("p-old", "p", false, 5), sb("p-older-with-container", "p", false, 9),
			sb("gone-1", "gone", false, 1), sb("gone-2", "gone", false, 2),
			sb("live-ready", "live", true, 1), sb("live-ready-old", "live", true, 3),
		},
		Containers: []Container{
			{ID: "c", PodUID: "p", Name: "app", SandboxID: "p-older-with-container", Running: true, CreatedAt: t0},
			{ID: "g", PodUID: "gone", Name: "app", SandboxID: "gone-2", CreatedAt: t0.Add(-time.Minute)},
		},
		ContentRemovable: func(uid types.UID) bool { return uid == "gone" },
		RuntimeRemovable: func(uid types.UID) bool { return uid == "gone" },
	}
	plan := Decide(in)
	// gone-2 loses its container in the same pass, so it goes too.
	want := []string{"gone-1", "gone-2", "p-old"}
	if got := sbIDs(plan.Sandboxes); !reflect.DeepEqual(got, want) {
		t.Fatalf("removed sandboxes %v, want %v", got, want)
	}
	if got := ids(plan.Containers); !reflect.DeepEqual(got, []string{"g"}) {
		t.Fatalf("removed containers %v", got)
	}
}

func TestDeadInstancesToRemove(t *testing.T) {
	cs := []Container{running("a4", "p", "app", 0), dead("a3", "p", "app", 1), dead("a1", "p", "app", 3), dead("a2", "p", "app", 2)}
	if got := ids(DeadInstancesToRemove(cs, 1, 0, t0)); !reflect.DeepEqual(got, []string{"a1", "a2"}) {
		t.Fatalf("keep 1: %v", got)
	}
	if got := ids(DeadInstancesToRemove(cs, 2, 0, t0)); !reflect.DeepEqual(got, []string{"a1"}) {
		t.Fatalf("keep 2: %v", got)
	}
	if got := ids(DeadInstancesToRemove(cs, 1, 90*time.Second, t0)); !reflect.DeepEqual(got, []string{"a1"}) {
		t.Fatalf("keep 1 with minAge: %v", got)
	}
	if got := DeadInstancesToRemove(cs, -1, 0, t0); len(got) != 0 {
		t.Fatalf("negative keep must keep all: %v", ids(got))
	}
}
