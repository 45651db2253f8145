package eviction

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

// recordingWorkers keeps the updates; terminate closes their channels.
type recordingWorkers struct{ updates chan podworkers.Update }

func (w *recordingWorkers) UpdatePod(u podworkers.Update) { w.updates <- u }

func evictedStatus() v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "low on memory",
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet}}}
}

func TestKillerStoresStatusThenWaitsForTermination(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	statuses := statusmanager.NewManager(nil)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "p", Namespace: "ns"}}
	statuses.Set(pod, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1", Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.DisruptionTarget, Status: v1.ConditionFalse, Reason: "Old"}}})
	w := &recordingWorkers{updates: make(chan podworkers.Update, 1)}
	k := NewKiller(KillerConfig{Workers: w, Statuses: statuses, Clock: clk})

	errc := make(chan error, 1)
	go func() { errc <- k.EvictPod(context.Background(), pod, 3, evictedStatus()) }()
	u := <-w.updates
	if u.Type != podworkers.Kill || u.GracePeriod == nil || *u.GracePeriod != 3 || u.Terminated == nil {
		t.Fatalf("update = %+v, want Kill with grace 3 and a Terminated channel", u)
	}
	// The Evicted status is stored before the kill is asked for.
	st, _ := statuses.Get("u")
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.PodIP != "10.0.0.1" {
		t.Fatalf("status = %+v", st)
	}
	if len(st.Conditions) != 2 || st.Conditions[1].Reason != v1.PodReasonTerminationByKubelet {
		t.Fatalf("conditions = %+v: the old DisruptionTarget must be replaced", st.Conditions)
	}
	select {
	case err := <-errc:
		t.Fatalf("returned %v before the pod terminated", err)
	default:
	}
	close(u.Terminated)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestKillerGivesUpAfterGracePlusCleanupTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	w := &recordingWorkers{updates: make(chan podworkers.Update, 1)}
	k := NewKiller(KillerConfig{Workers: w, Statuses: statusmanager.NewManager(nil), Clock: clk})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "p", Namespace: "ns"}}
	errc := make(chan error, 1)
	go func() { errc <- k.EvictPod(context.Background(), pod, 5, evictedStatus()) }()
	<-w.updates
	for !clk.HasWaiters() {
		runtime.Gosched() // the killer arms its timer right after the update
	}
	clk.Step(5*time.Second + podCleanupTimeout - time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("gave up early: %v", err)
	default:
	}
	clk.Step(time.Millisecond)
	if err := <-errc; err == nil {
		t.Fatal("no error although the pod never terminated")
	}
}

type imageFs struct{ mountpoint string }

func (f imageFs) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	if f.mountpoint == "" {
		return nil, errors.New("unavailable")
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.mountpoint}}}}, nil
}

func TestDedicatedImageFs(t *testing.T) {
	dir := t.TempDir()
	if dedicated, err := DedicatedImageFs(dir, imageFs{mountpoint: dir})(context.Background()); err != nil || dedicated {
		t.Errorf("same directory: dedicated=%v err=%v", dedicated, err)
	}
	// procfs is always another filesystem than a temporary directory.
	if dedicated, err := DedicatedImageFs(dir, imageFs{mountpoint: "/proc"})(context.Background()); err != nil || !dedicated {
		t.Errorf("/proc: dedicated=%v err=%v", dedicated, err)
	}
	if _, err := DedicatedImageFs(dir, imageFs{})(context.Background()); err == nil {
		t.Error("a runtime error was swallowed")
	}
}
