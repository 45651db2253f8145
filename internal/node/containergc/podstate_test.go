package containergc

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

type states map[types.UID]podworkers.PodState

func (s states) States() map[types.UID]podworkers.PodState { return s }

func TestPodStateOf(t *testing.T) {
	pods := podmanager.NewManager()
	statuses := statusmanager.NewManager(nil)
	add := func(uid string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns"}}
		pods.AddOrUpdate(p)
		return p
	}
	statuses.Set(add("evicted"), v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"})
	statuses.Set(add("failed"), v1.PodStatus{Phase: v1.PodFailed, Reason: "Error"})
	add("running")
	add("no-worker")
	s := PodStateOf(PodStateConfig{Pods: pods, Statuses: statuses, Workers: states{
		"evicted":     {State: podworkers.Terminating},
		"failed":      {State: podworkers.Terminated},
		"running":     {State: podworkers.Syncing},
		"deleted":     {State: podworkers.Terminated, Removed: true},
		"terminating": {State: podworkers.Terminating, Removed: true},
	}})
	cases := []struct {
		uid         types.UID
		content, rt bool
	}{
		{"evicted", true, false},  // evicted: its content goes at once, its containers once stopped
		{"failed", false, true},   // terminated but still wanted: containers go, content stays
		{"running", false, false}, // syncing
		{"deleted", true, true},   // removed from its source and terminated
		{"terminating", false, false},
		{"no-worker", false, false}, // known, not started yet
		{"unknown", true, true},     // neither known nor worked on
	}
	for _, c := range cases {
		if got := s.ShouldPodContentBeRemoved(c.uid); got != c.content {
			t.Errorf("%s: ShouldPodContentBeRemoved = %v, want %v", c.uid, got, c.content)
		}
		if got := s.ShouldPodRuntimeBeRemoved(c.uid); got != c.rt {
			t.Errorf("%s: ShouldPodRuntimeBeRemoved = %v, want %v", c.uid, got, c.rt)
		}
	}
}
