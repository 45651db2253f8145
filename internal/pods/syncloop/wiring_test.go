package syncloop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// A probe result change reaches the loop and syncs its pod.
func TestProbeUpdateSyncsPod(t *testing.T) {
	probes := make(chan prober.Update, 1)
	probes <- prober.Update{PodUID: "a", ContainerName: "c", Type: prober.Readiness, Result: prober.Success}
	h := &recordingHandler{}
	if !Iteration(context.Background(), Channels{Probes: probes}, h) || len(h.calls) != 1 || h.calls[0] != "probe Readiness" {
		t.Fatalf("calls %v", h.calls)
	}
	workers := &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
	d := NewDispatcher(DispatcherConfig{Pods: podmanager.NewManager(), Workers: workers, Runtime: noRuntime{}})
	d.HandleProbeUpdate(context.Background(), prober.Update{PodUID: "a"})
	if len(workers.synced) != 1 || workers.synced[0] != "a" {
		t.Fatalf("synced %v", workers.synced)
	}
}

// The QoS cgroups are sized for the active pods: a newly admitted pod
// counts before its worker starts; a terminating one no longer does.
func TestDispatcherUpdatesQOS(t *testing.T) {
	pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
	var sized []string
	var started []int // worker updates already made at each sizing
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: noRuntime{},
		UpdateQOS: func(active []*v1.Pod) {
			var names []string
			for _, p := range active {
				names = append(names, p.Name)
			}
			sort.Strings(names)
			sized = append(sized, strings.Join(names, ","))
			started = append(started, len(workers.updates))
		}})
	ctx := context.Background()
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{mkPod("a", "a", nil)}})
	workers.states["a"] = podworkers.PodState{State: podworkers.Syncing}
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{mkPod("b", "b", nil)}})
	workers.states["b"] = podworkers.PodState{State: podworkers.Syncing}
	// A known pod delivered again is not admitted again.
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{mkPod("a", "a", nil)}})
	workers.states["a"] = podworkers.PodState{State: podworkers.Terminating}
	d.HandleHousekeeping(ctx)
	if got, want := strings.Join(sized, " "), "a a,b b"; got != want {
		t.Fatalf("QoS sized for %q, want %q", got, want)
	}
	if fmt.Sprint(started) != "[0 1 3]" {
		t.Fatalf("worker updates made before each sizing: %v, want [0 1 3] (sized before the new pod's worker starts)", started)
	}
}
