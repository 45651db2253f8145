package runonce

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

func pod(name string, policy v1.RestartPolicy, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

func status(states ...kuberuntime.ContainerState) *kuberuntime.PodStatus {
	st := &kuberuntime.PodStatus{}
	for i, s := range states {
		st.Containers = append(st.Containers, &kuberuntime.ContainerStatus{Name: string(rune('a' + i)), State: s})
	}
	return st
}

func TestDone(t *testing.T) {
	exited := func(code int32) *kuberuntime.ContainerStatus {
		return &kuberuntime.ContainerStatus{State: kuberuntime.StateExited, ExitCode: code}
	}
	running := &kuberuntime.ContainerStatus{State: kuberuntime.StateRunning}
	created := &kuberuntime.ContainerStatus{State: kuberuntime.StateCreated}
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		cs     []*kuberuntime.ContainerStatus // for containers a, b
		want   v1.PodPhase
		done   bool
	}{
		{"all running", v1.RestartPolicyAlways, []*kuberuntime.ContainerStatus{running, running}, v1.PodRunning, true},
		{"one not created yet", v1.RestartPolicyAlways, []*kuberuntime.ContainerStatus{running}, "", false},
		{"one only created", v1.RestartPolicyAlways, []*kuberuntime.ContainerStatus{running, created}, "", false},
		{"running and succeeded", v1.RestartPolicyAlways, []*kuberuntime.ContainerStatus{running, exited(0)}, v1.PodRunning, true},
		{"all succeeded", v1.RestartPolicyNever, []*kuberuntime.ContainerStatus{exited(0), exited(0)}, v1.PodSucceeded, true},
		{"failed, never restarted", v1.RestartPolicyNever, []*kuberuntime.ContainerStatus{running, exited(1)}, v1.PodFailed, true},
		{"failed, will restart", v1.RestartPolicyOnFailure, []*kuberuntime.ContainerStatus{running, exited(1)}, "", false},
	}
	for _, c := range cases {
		st := &kuberuntime.PodStatus{}
		for i, cs := range c.cs {
			cs := *cs
			cs.Name = string(rune('a' + i))
			st.Containers = append(st.Containers, &cs)
		}
		phase, done := Done(pod("p", c.policy, "a", "b"), st)
		if phase != c.want || done != c.done {
			t.Errorf("%s: Done = %q %v, want %q %v", c.name, phase, done, c.want, c.done)
		}
	}
}

func TestFinalFailure(t *testing.T) {
	waiting := func(reason string) v1.PodStatus {
		return v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: "m"}}}}}
	}
	for reason, final := range map[string]bool{
		"CreateContainerConfigError": true, "ErrImageNeverPull": true, "InvalidImageName": true,
		"ErrImagePull": false, "ImagePullBackOff": false, "ContainerCreating": false, "CrashLoopBackOff": false,
	} {
		if _, _, got := FinalFailure(waiting(reason)); got != final {
			t.Errorf("%s: final = %v, want %v", reason, got, final)
		}
	}
}

// fakePods is the runtime and the syncer: each pod's status after its
// n-th sync comes from script (the last entry repeats).
type fakePods struct {
	mu       sync.Mutex
	syncs    map[types.UID]int
	script   map[types.UID][]*kuberuntime.PodStatus
	statuses *statusmanager.Manager
	publish  map[types.UID]v1.PodStatus
}

func (f *fakePods) SyncPod(ctx context.Context, p *v1.Pod) (podworkers.Outcome, error) {
	f.mu.Lock()
	f.syncs[p.UID]++
	f.mu.Unlock()
	if st, ok := f.publish[p.UID]; ok {
		f.statuses.Set(p, st)
	}
	return podworkers.Outcome{}, nil
}

func (f *fakePods) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kuberuntime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.script[uid]
	if len(s) == 0 {
		return nil, errors.New("no such pod")
	}
	return s[min(f.syncs[uid], len(s))-1], nil
}

func newFake() *fakePods {
	return &fakePods{syncs: map[types.UID]int{}, script: map[types.UID][]*kuberuntime.PodStatus{},
		statuses: statusmanager.NewManager(nil), publish: map[types.UID]v1.PodStatus{}}
}

// stepWhenWaiting steps the clock by d once someone waits on it.
func stepWhenWaiting(clk *testingclock.FakeClock, d time.Duration) {
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.Step(d)
}

func TestRunReportsEachPod(t *testing.T) {
	f := newFake()
	web, bad := pod("web", v1.RestartPolicyAlways, "a"), pod("bad", v1.RestartPolicyAlways, "a")
	f.script[web.UID] = []*kuberuntime.PodStatus{status(kuberuntime.StateRunning)}
	f.script[bad.UID] = []*kuberuntime.PodStatus{status()}
	f.publish[bad.UID] = v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{
		Waiting: &v1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "s" not found`}}}}}
	updates := make(chan sources.PodUpdate, 1)
	updates <- sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{web, bad}}
	var out bytes.Buffer
	err := Run(context.Background(), Config{Updates: updates, SourcesReady: func() bool { return true },
		Syncer: f, Runtime: f, Statuses: f.statuses, Clock: testingclock.NewFakeClock(time.Unix(0, 0)), Out: &out})
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("err = %v, want ErrFailed", err)
	}
	want := "pod \"bad\": failed: CreateContainerConfigError: secret \"s\" not found\npod \"web\": Running\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if f.syncs[bad.UID] != 1 {
		t.Errorf("bad synced %d times: a final failure is not retried", f.syncs[bad.UID])
	}
}

// A pod not running yet is synced again after 1s, then 2s, ...; the
// sources are waited for at most ManifestDelay.
func TestRunWaitsForSourcesAndRetries(t *testing.T) {
	f := newFake()
	job := pod("job", v1.RestartPolicyNever, "a")
	f.script[job.UID] = []*kuberuntime.PodStatus{status(), status(kuberuntime.StateCreated), status(kuberuntime.StateExited)}
	updates := make(chan sources.PodUpdate, 1)
	updates <- sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{job}}
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var out bytes.Buffer
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), Config{Updates: updates, SourcesReady: func() bool { return false },
			Syncer: f, Runtime: f, Statuses: f.statuses, Clock: clk, Out: &out})
	}()
	stepWhenWaiting(clk, ManifestDelay) // the file source never says it is ready
	stepWhenWaiting(clk, RetryDelay)    // after sync 1: no container yet
	stepWhenWaiting(clk, 2*RetryDelay)  // after sync 2: created, not started
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != `pod "job": Succeeded` || f.syncs[job.UID] != 3 {
		t.Fatalf("output %q after %d syncs", got, f.syncs[job.UID])
	}
}
