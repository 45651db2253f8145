package podsync

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

type fakeRuntime struct{ syncs int }

func (f *fakeRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*kuberuntime.PodStatus, error) {
	return &kuberuntime.PodStatus{UID: uid, Name: name, Namespace: ns}, nil
}
func (f *fakeRuntime) SyncPod(context.Context, kuberuntime.Inputs) kuberuntime.SyncResult {
	f.syncs++
	return kuberuntime.SyncResult{}
}
func (f *fakeRuntime) KillPod(context.Context, *v1.Pod, *kuberuntime.PodStatus, *int64) error {
	return nil
}
func (f *fakeRuntime) RemovePod(context.Context, *kuberuntime.PodStatus) error      { return nil }
func (f *fakeRuntime) PruneContainers(context.Context, *kuberuntime.PodStatus, int) {}
func (f *fakeRuntime) ResizeInProgress(*v1.Pod, *kuberuntime.PodStatus) bool        { return false }
func (f *fakeRuntime) Actuated(*v1.Pod) *allocation.PodResources                    { return nil }

type fakeVolumes struct {
	missing  bool
	tearDown error
	tornDown []string
}

func (f *fakeVolumes) SetUpPod(context.Context, *v1.Pod) volume.SetUpResult {
	if !f.missing {
		return volume.SetUpResult{}
	}
	return volume.SetUpResult{
		Failed:    []volume.Failure{{Volume: "cfg", Err: errors.New(`configmap "app" not found`)}},
		Unmounted: []string{"cfg"},
	}
}
func (f *fakeVolumes) Refresh(context.Context, *v1.Pod) error { return nil }
func (f *fakeVolumes) TearDown(uid string) error {
	f.tornDown = append(f.tornDown, uid)
	return f.tearDown
}

type recorded struct{ reason, message string }
type fakeRecorder struct{ events []recorded }

func (r *fakeRecorder) Eventf(_ runtime.Object, _, reason, format string, args ...any) {
	r.events = append(r.events, recorded{reason, fmt.Sprintf(format, args...)})
}

// A pod whose volume cannot be set up gets no sandbox and no container: it
// waits in ContainerCreating with a FailedMount event per attempt, attempts
// backing off, and starts as soon as the volume can be set up.
func TestVolumesGateContainers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	rt, vols, rec := &fakeRuntime{}, &fakeVolumes{missing: true}, &fakeRecorder{}
	st := statusmanager.NewManager(nil)
	s := New(Config{Runtime: rt, Status: st, Clock: clk, Volumes: vols, Recorder: rec})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}

	out, err := s.SyncPod(context.Background(), pod)
	if err != nil || out.RequeueAfter != mountRetryInitial || rt.syncs != 0 {
		t.Fatalf("first sync: out %+v err %v runtime syncs %d", out, err, rt.syncs)
	}
	want := recorded{"FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`}
	if len(rec.events) != 1 || rec.events[0] != want {
		t.Fatalf("events %+v", rec.events)
	}
	ps, _ := st.Get(pod.UID)
	if ps.Phase != v1.PodPending || ps.ContainerStatuses[0].State.Waiting == nil || ps.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("status %+v", ps)
	}

	// Another sync inside the back-off neither retries loudly nor starts.
	clk.Step(200 * time.Millisecond)
	out, _ = s.SyncPod(context.Background(), pod)
	if len(rec.events) != 1 || out.RequeueAfter != 300*time.Millisecond || rt.syncs != 0 {
		t.Fatalf("inside back-off: events %d out %+v syncs %d", len(rec.events), out, rt.syncs)
	}
	clk.Step(300 * time.Millisecond)
	out, _ = s.SyncPod(context.Background(), pod)
	if len(rec.events) != 2 || out.RequeueAfter != 2*mountRetryInitial {
		t.Fatalf("after back-off: events %d out %+v", len(rec.events), out)
	}

	vols.missing = false
	if _, err := s.SyncPod(context.Background(), pod); err != nil || rt.syncs != 1 {
		t.Fatalf("volume ready: err %v runtime syncs %d", err, rt.syncs)
	}
}

// A terminating pod's plugin volumes are unpublished after its containers
// stopped; while that fails the pod is not terminated (so not deleted).
func TestTerminatingPodUnmountsVolumes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	rt, vols := &fakeRuntime{}, &fakeVolumes{tearDown: errors.New("driver name d not found in the list of registered CSI drivers")}
	s := New(Config{Runtime: rt, Status: statusmanager.NewManager(nil), Clock: clk, Volumes: vols})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if err := s.SyncTerminatingPod(context.Background(), pod, nil); err == nil {
		t.Fatal("terminated although its volumes could not be unmounted")
	}
	vols.tearDown = nil
	if err := s.SyncTerminatingPod(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	if len(vols.tornDown) != 2 || vols.tornDown[1] != "u1" {
		t.Fatalf("teardowns %v", vols.tornDown)
	}
}
