package podsync

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

func res(cpu, mem string) v1.ResourceRequirements {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// A resize the allocation manager accepted is applied by the next sync,
// whose status shows the new resources (status.containerStatuses[].resources
// and allocatedResources) with PodResizeInProgress gone and a
// ResizeCompleted event, as upstream.
func TestSyncAppliesAllocatedResize(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cri := critest.New(t, clk)
	cri.Images.SetFakeImages([]string{"busybox"})
	rec := record.NewFakeRecorder(100)
	dir := t.TempDir()
	rt := kuberuntime.NewManager(kuberuntime.Config{
		Runtime: cri.RuntimeClient, Clock: clk, Recorder: rec, Actuated: allocation.NewMemoryState(),
		Images: kuberuntime.NewImagePuller(kuberuntime.ImageConfig{Images: cri.ImageClient, Clock: clk, Recorder: rec}),
		Spec:   criconfig.Options{PodLogsDir: filepath.Join(dir, "logs")}, PodsDir: filepath.Join(dir, "pods"),
	})
	allocated := allocation.NewMemoryState()
	records := allocation.NewRecords(allocated, clk, nil)
	status := statusmanager.NewManager(nil)
	s := New(Config{Runtime: rt, Status: status, Clock: clk, RuntimeName: "containerd", Recorder: rec, Allocations: records})

	pod := newPod("app")
	pod.Generation = 1
	pod.Spec.Containers[0].Resources = res("100m", "64Mi")
	if err := allocated.SetPod(pod.UID, allocation.Of(pod)); err != nil {
		t.Fatal(err)
	}
	s.SyncPod(t.Context(), pod)
	ps, _ := status.Get(pod.UID)
	cs := ps.ContainerStatuses[0]
	if cs.Resources == nil || cs.Resources.Limits.Memory().String() != "64Mi" || cs.AllocatedResources.Cpu().String() != "100m" {
		t.Fatalf("before: resources %+v allocated %+v", cs.Resources, cs.AllocatedResources)
	}

	// pods/resize to 200m/128Mi; a spec the node has not accepted yet is
	// not applied.
	resized := pod.DeepCopy()
	resized.Generation = 2
	resized.Spec.Containers[0].Resources = res("200m", "128Mi")
	s.SyncPod(t.Context(), resized)
	if u := cri.ResourceUpdates(); len(u) != 0 {
		t.Fatalf("applied a resize that was not allocated: %v", u)
	}
	ps, _ = status.Get(pod.UID)
	if got := ps.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "100m" {
		t.Fatalf("allocatedResources cpu %s before the allocation moved", got)
	}

	// Accepted (what the allocation manager's handleResize does).
	if err := allocated.SetPod(pod.UID, allocation.Of(resized)); err != nil {
		t.Fatal(err)
	}
	records.SetInProgress(pod.UID, "", "", 2)
	rec.Events = make(chan string, 100)
	s.SyncPod(t.Context(), resized)
	if u := cri.ResourceUpdates(); len(u) != 2 {
		t.Fatalf("UpdateContainerResources calls %d, want 2", len(u))
	}
	ps, _ = status.Get(pod.UID)
	cs = ps.ContainerStatuses[0]
	if cs.Resources.Limits.Memory().String() != "128Mi" || cs.Resources.Requests.Cpu().String() != "200m" || cs.AllocatedResources.Cpu().String() != "200m" {
		t.Fatalf("after: resources %+v allocated %+v", cs.Resources, cs.AllocatedResources)
	}
	for _, c := range ps.Conditions {
		if c.Type == v1.PodResizeInProgress || c.Type == v1.PodResizePending {
			t.Fatalf("condition %s still set after the resize completed", c.Type)
		}
	}
	select {
	case ev := <-rec.Events:
		if !strings.HasPrefix(ev, `Normal ResizeCompleted Pod resize completed: {"containers":[{"name":"app"`) || !strings.HasSuffix(ev, `"generation":2}`) {
			t.Fatalf("event %q", ev)
		}
	default:
		t.Fatal("no ResizeCompleted event")
	}
	if ps.ObservedGeneration != 2 {
		t.Fatalf("observedGeneration %d, want 2", ps.ObservedGeneration)
	}
}
