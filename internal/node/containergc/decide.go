package containergc

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Policy is the container GC policy (upstream's flags
// --minimum-container-ttl-duration, --maximum-dead-containers-per-container
// and --maximum-dead-containers).
type Policy struct {
	// MinAge: a dead container younger than this is kept.
	MinAge time.Duration
	// MaxPerPodContainer dead instances kept per container of a pod;
	// negative means no limit.
	MaxPerPodContainer int
	// MaxContainers dead containers kept on the node; negative means no limit.
	MaxContainers int
}

// DefaultPolicy is upstream's default.
var DefaultPolicy = Policy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}

// Container is one container instance the kubelet created.
type Container struct {
	ID           string
	PodUID       types.UID
	PodName      string
	PodNamespace string
	Name         string
	SandboxID    string
	Running      bool
	CreatedAt    time.Time
}

// Sandbox is one pod sandbox the kubelet created.
type Sandbox struct {
	ID        string
	PodUID    types.UID
	Ready     bool
	CreatedAt time.Time
}

// Input is everything a GC pass decides from.
type Input struct {
	Policy     Policy
	Now        time.Time
	Containers []Container
	Sandboxes  []Sandbox
	// AllSourcesReady: every pod source has been seen, so a pod unknown to
	// the kubelet is really deleted. Until then only the limits apply.
	AllSourcesReady bool
	// EvictNonDeletedPods also removes everything dead of pods that have
	// terminated but are not deleted (the eviction manager's request).
	EvictNonDeletedPods bool
	// ContentRemovable reports a pod deleted (or evicted) and terminated,
	// or unknown: all its dead containers and sandboxes go.
	ContentRemovable func(types.UID) bool
	// RuntimeRemovable reports a pod terminated (or unknown).
	RuntimeRemovable func(types.UID) bool
}

// Plan is what a pass removes.
type Plan struct {
	Containers []Container
	Sandboxes  []Sandbox
}

type unitKey struct {
	uid  types.UID
	name string
}

// Decide returns the dead containers and sandboxes to remove. It is pure.
func Decide(in Input) Plan {
	var plan Plan
	removed := map[string]bool{}
	remove := func(cs []Container) {
		for _, c := range cs {
			if !removed[c.ID] {
				removed[c.ID] = true
				plan.Containers = append(plan.Containers, c)
			}
		}
	}
	podGone := func(uid types.UID) bool {
		return in.AllSourcesReady && ((in.ContentRemovable != nil && in.ContentRemovable(uid)) ||
			(in.EvictNonDeletedPods && in.RuntimeRemovable != nil && in.RuntimeRemovable(uid)))
	}

	// Evictable containers grouped per (pod, container name), newest first.
	units := map[unitKey][]Container{}
	for _, c := range in.Containers {
		if c.Running || in.Now.Sub(c.CreatedAt) < in.Policy.MinAge {
			continue
		}
		k := unitKey{c.PodUID, c.Name}
		units[k] = append(units[k], c)
	}
	keys := make([]unitKey, 0, len(units))
	for k, cs := range units {
		sortNewestFirst(cs)
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].uid != keys[j].uid {
			return keys[i].uid < keys[j].uid
		}
		return keys[i].name < keys[j].name
	})

	// Every dead container of a deleted pod goes.
	live := keys[:0:0]
	for _, k := range keys {
		if podGone(k.uid) {
			remove(units[k])
			continue
		}
		live = append(live, k)
	}
	// Then the limit per container.
	if in.Policy.MaxPerPodContainer >= 0 {
		for _, k := range live {
			remove(beyond(units[k], in.Policy.MaxPerPodContainer))
		}
	}
	// Then the node-wide limit: an equal share per container (at least
	// one each), and if that is not enough the oldest of all.
	if in.Policy.MaxContainers >= 0 {
		left := func() []Container {
			var out []Container
			for _, k := range live {
				for _, c := range units[k] {
					if !removed[c.ID] {
						out = append(out, c)
					}
				}
			}
			return out
		}
		if all := left(); len(all) > in.Policy.MaxContainers && len(live) > 0 {
			share := in.Policy.MaxContainers / len(live)
			if share < 1 {
				share = 1
			}
			for _, k := range live {
				var kept []Container
				for _, c := range units[k] {
					if !removed[c.ID] {
						kept = append(kept, c)
					}
				}
				remove(beyond(kept, share))
			}
			if all := left(); len(all) > in.Policy.MaxContainers {
				sortNewestFirst(all)
				remove(beyond(all, in.Policy.MaxContainers))
			}
		}
	}

	// Sandboxes: one with a container left (running or dead) or ready is
	// active and stays. A deleted pod loses every inactive sandbox; a live
	// pod keeps its newest.
	hasContainer := map[string]bool{}
	for _, c := range in.Containers {
		if !removed[c.ID] {
			hasContainer[c.SandboxID] = true
		}
	}
	byPod := map[types.UID][]Sandbox{}
	var pods []types.UID
	for _, s := range in.Sandboxes {
		if _, ok := byPod[s.PodUID]; !ok {
			pods = append(pods, s.PodUID)
		}
		byPod[s.PodUID] = append(byPod[s.PodUID], s)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i] < pods[j] })
	for _, uid := range pods {
		sbs := byPod[uid]
		sort.SliceStable(sbs, func(i, j int) bool { return sbs[i].CreatedAt.After(sbs[j].CreatedAt) })
		keep := 1
		if podGone(uid) {
			keep = 0
		}
		for i := len(sbs) - 1; i >= keep; i-- {
			if s := sbs[i]; !s.Ready && !hasContainer[s.ID] {
				plan.Sandboxes = append(plan.Sandboxes, s)
			}
		}
	}
	return plan
}

// DeadInstancesToRemove returns, of the instances of one container of a
// live pod, the dead ones beyond the newest keep that are older than
// minAge: what a sync removes right after it started a new instance, so a
// crash-looping container never waits for the next GC pass. It is pure.
func DeadInstancesToRemove(instances []Container, keep int, minAge time.Duration, now time.Time) []Container {
	if keep < 0 {
		return nil
	}
	var dead []Container
	for _, c := range instances {
		if !c.Running && now.Sub(c.CreatedAt) >= minAge {
			dead = append(dead, c)
		}
	}
	sortNewestFirst(dead)
	return beyond(dead, keep)
}

func sortNewestFirst(cs []Container) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].CreatedAt.After(cs[j].CreatedAt) })
}

func beyond(cs []Container, n int) []Container {
	if len(cs) <= n {
		return nil
	}
	return cs[n:]
}
