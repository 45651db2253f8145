package podstatus

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

var now = time.Unix(5000, 0)

func mkPod(policy v1.RestartPolicy, names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	p.Spec.RestartPolicy = policy
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox:1.36"})
	}
	return p
}

func rt(cs ...*kuberuntime.ContainerStatus) *kuberuntime.PodStatus {
	return &kuberuntime.PodStatus{UID: "u1", Sandboxes: []kuberuntime.SandboxStatus{{ID: "sb", Ready: true, IPs: []string{"10.88.0.9"}}},
		IPs: []string{"10.88.0.9"}, Containers: cs}
}

func running(name string) *kuberuntime.ContainerStatus {
	return &kuberuntime.ContainerStatus{ID: name + "1", Name: name, State: kuberuntime.StateRunning, StartedAt: now.Add(-time.Minute), CreatedAt: now.Add(-time.Minute)}
}

func exited(name string, code int32, restarts int) *kuberuntime.ContainerStatus {
	return &kuberuntime.ContainerStatus{ID: name + "x", Name: name, State: kuberuntime.StateExited, ExitCode: code, RestartCount: restarts,
		StartedAt: now.Add(-time.Minute), FinishedAt: now.Add(-time.Second), CreatedAt: now.Add(-time.Minute)}
}

func cond(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestGenerate(t *testing.T) {
	cases := []struct {
		name        string
		pod         *v1.Pod
		rt          *kuberuntime.PodStatus
		failures    map[string]kuberuntime.ContainerFailure
		wantPhase   v1.PodPhase
		wantReady   v1.ConditionStatus
		wantWaiting string // waiting reason of the first container
		wantTerm    string // terminated reason of the first container
	}{
		{name: "nothing on the runtime yet", pod: mkPod(v1.RestartPolicyAlways, "c"), rt: &kuberuntime.PodStatus{},
			wantPhase: v1.PodPending, wantReady: v1.ConditionFalse, wantWaiting: "ContainerCreating"},
		{name: "running", pod: mkPod(v1.RestartPolicyAlways, "c"), rt: rt(running("c")),
			wantPhase: v1.PodRunning, wantReady: v1.ConditionTrue},
		{name: "image pull failure shown as waiting reason", pod: mkPod(v1.RestartPolicyAlways, "c"), rt: rt(),
			failures:  map[string]kuberuntime.ContainerFailure{"c": {Reason: "ErrImagePull", Message: "not found"}},
			wantPhase: v1.PodPending, wantReady: v1.ConditionFalse, wantWaiting: "ErrImagePull"},
		{name: "crash loop is Running with CrashLoopBackOff", pod: mkPod(v1.RestartPolicyAlways, "c"), rt: rt(exited("c", 1, 3)),
			failures:  map[string]kuberuntime.ContainerFailure{"c": {Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
			wantPhase: v1.PodRunning, wantReady: v1.ConditionFalse, wantWaiting: "CrashLoopBackOff"},
		{name: "Never and exit 0 is Succeeded", pod: mkPod(v1.RestartPolicyNever, "c"), rt: rt(exited("c", 0, 0)),
			wantPhase: v1.PodSucceeded, wantReady: v1.ConditionFalse, wantTerm: "Completed"},
		{name: "Never and exit 1 is Failed", pod: mkPod(v1.RestartPolicyNever, "c"), rt: rt(exited("c", 1, 0)),
			wantPhase: v1.PodFailed, wantReady: v1.ConditionFalse, wantTerm: "Error"},
		{name: "OnFailure and exit 0 is Succeeded", pod: mkPod(v1.RestartPolicyOnFailure, "c"), rt: rt(exited("c", 0, 0)),
			wantPhase: v1.PodSucceeded, wantReady: v1.ConditionFalse, wantTerm: "Completed"},
		{name: "OnFailure and exit 1 restarts", pod: mkPod(v1.RestartPolicyOnFailure, "c"), rt: rt(exited("c", 1, 0)),
			wantPhase: v1.PodRunning, wantReady: v1.ConditionFalse, wantWaiting: "ContainerCreating"},
		{name: "one running one waiting is Pending", pod: mkPod(v1.RestartPolicyAlways, "a", "b"), rt: rt(running("b")),
			wantPhase: v1.PodPending, wantReady: v1.ConditionFalse, wantWaiting: "ContainerCreating"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(Input{Pod: tc.pod, Runtime: tc.rt, Failures: tc.failures, HostIPs: []string{"192.0.2.1"}, Now: now})
			if s.Phase != tc.wantPhase {
				t.Fatalf("phase = %s, want %s", s.Phase, tc.wantPhase)
			}
			if c := cond(s, v1.PodReady); c.Status != tc.wantReady {
				t.Fatalf("Ready = %s, want %s", c.Status, tc.wantReady)
			}
			cs := s.ContainerStatuses[0]
			if tc.wantWaiting != "" && (cs.State.Waiting == nil || cs.State.Waiting.Reason != tc.wantWaiting) {
				t.Fatalf("state = %+v, want waiting %s", cs.State, tc.wantWaiting)
			}
			if tc.wantTerm != "" && (cs.State.Terminated == nil || cs.State.Terminated.Reason != tc.wantTerm) {
				t.Fatalf("state = %+v, want terminated %s", cs.State, tc.wantTerm)
			}
			if s.HostIP != "192.0.2.1" || s.QOSClass != v1.PodQOSBestEffort {
				t.Fatalf("hostIP %q qos %q", s.HostIP, s.QOSClass)
			}
		})
	}
}

func TestCrashLoopKeepsLastTermination(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, "c")
	s := Generate(Input{Pod: p, Runtime: rt(exited("c", 2, 4)), RuntimeName: "containerd", Now: now,
		Failures: map[string]kuberuntime.ContainerFailure{"c": {Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container=c pod=web(u1)"}}})
	cs := s.ContainerStatuses[0]
	if cs.RestartCount != 4 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 2 {
		t.Fatalf("status = %+v, want restartCount 4 and last termination exit 2", cs)
	}
	if cs.ContainerID != "containerd://cx" {
		t.Fatalf("containerID = %q", cs.ContainerID)
	}
}

func TestTransitionTimesAndTerminalPhaseAreKept(t *testing.T) {
	p := mkPod(v1.RestartPolicyNever, "c")
	first := Generate(Input{Pod: p, Runtime: rt(running("c")), Now: now})
	later := Generate(Input{Pod: p, Runtime: rt(running("c")), Old: first, Now: now.Add(time.Hour)})
	if !cond(later, v1.PodReady).LastTransitionTime.Time.Equal(now) {
		t.Fatalf("Ready transition time moved without a status change: %v", cond(later, v1.PodReady).LastTransitionTime)
	}
	if !later.StartTime.Equal(first.StartTime) {
		t.Fatal("start time changed")
	}
	done := Generate(Input{Pod: p, Runtime: rt(exited("c", 0, 0)), Old: later, Now: now.Add(2 * time.Hour)})
	if done.Phase != v1.PodSucceeded {
		t.Fatalf("phase = %s, want Succeeded", done.Phase)
	}
	// The runtime forgetting the container must not move the pod back.
	after := Generate(Input{Pod: p, Runtime: &kuberuntime.PodStatus{}, Old: done, Now: now.Add(3 * time.Hour)})
	if after.Phase != v1.PodSucceeded {
		t.Fatalf("terminal phase went back to %s", after.Phase)
	}
}

func TestInitContainers(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, "app")
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36"}}
	s := Generate(Input{Pod: p, Runtime: rt(running("init")), Now: now})
	if s.Phase != v1.PodPending {
		t.Fatalf("phase = %s, want Pending while initialising", s.Phase)
	}
	if c := cond(s, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Reason != "ContainersNotInitialized" {
		t.Fatalf("Initialized = %+v", c)
	}
	if w := s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Fatalf("app container state = %+v, want PodInitializing", s.ContainerStatuses[0].State)
	}
	s = Generate(Input{Pod: p, Runtime: rt(exited("init", 0, 0), running("app")), Now: now})
	if s.Phase != v1.PodRunning || cond(s, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Fatalf("after init: phase %s, initialized %s", s.Phase, cond(s, v1.PodInitialized).Status)
	}
	if !s.InitContainerStatuses[0].Ready {
		t.Errorf("an init container that exited 0 is ready, as upstream")
	}

	// Not created yet: init containers wait in PodInitializing too, and a
	// failed one is not ready.
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init2", Image: "busybox:1.36"})
	s = Generate(Input{Pod: p, Runtime: rt(exited("init", 1, 0)), Now: now})
	if w := s.InitContainerStatuses[1].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("second init container state = %+v, want PodInitializing", s.InitContainerStatuses[1].State)
	}
	if s.InitContainerStatuses[0].Ready {
		t.Errorf("a failed init container is not ready")
	}
}

func TestTerminalPodGetsTerminalPhase(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, "c")
	killed := exited("c", 137, 0)
	s := Generate(Input{Pod: p, Runtime: rt(killed), Terminal: true, Now: now})
	if s.Phase != v1.PodFailed {
		t.Fatalf("killed pod phase = %s, want Failed", s.Phase)
	}
	s = Generate(Input{Pod: p, Runtime: rt(exited("c", 0, 0)), Terminal: true, Now: now})
	if s.Phase != v1.PodSucceeded {
		t.Fatalf("cleanly stopped pod phase = %s, want Succeeded", s.Phase)
	}
}

// A pod the kubelet stopped for good (evicted, shut down) keeps the
// DisruptionTarget condition it was given, and its exited containers stay
// terminated even under restartPolicy Always, as upstream reports them.
func TestGenerateKeepsDisruptionTargetAndTerminatedContainers(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", Generation: 2},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "main", Image: "busybox"}}}}
	dt := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: "Pod was terminated in response to imminent node shutdown.", LastTransitionTime: metav1.NewTime(time.Unix(50, 0))}
	old := v1.PodStatus{Phase: v1.PodFailed, Reason: "Terminated", Message: dt.Message, Conditions: []v1.PodCondition{dt}}
	rt := &kuberuntime.PodStatus{Containers: []*kuberuntime.ContainerStatus{{
		ID: "c1", Name: "main", State: kuberuntime.StateExited, ExitCode: 137, StartedAt: time.Unix(10, 0), FinishedAt: time.Unix(60, 0)}}}
	s := Generate(Input{Pod: pod, Runtime: rt, Old: old, Terminal: true, RuntimeName: "containerd", Now: time.Unix(100, 0)})
	if s.Phase != v1.PodFailed || s.Reason != "Terminated" {
		t.Errorf("phase %s reason %q", s.Phase, s.Reason)
	}
	var got *v1.PodCondition
	for i := range s.Conditions {
		if s.Conditions[i].Type == v1.DisruptionTarget {
			got = &s.Conditions[i]
		}
	}
	if got == nil || *got != dt {
		t.Errorf("DisruptionTarget %+v, want %+v", got, dt)
	}
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Errorf("container state %+v, want terminated 137", s.ContainerStatuses[0].State)
	}
}

// A container the kubelet stopped because its pod is going away is
// reported terminated, not waiting for a restart that will never come
// (upstream's ShouldContainerBeRestarted is false for a deleted pod): the
// "Lifecycle Sleep Hook" conformance specs wait for that state.
func TestStoppedContainerOfTerminatingPodIsTerminated(t *testing.T) {
	deleted := mkPod(v1.RestartPolicyAlways, "c")
	ts := metav1.NewTime(now)
	deleted.DeletionTimestamp = &ts
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"deleted pod", Input{Pod: deleted, Runtime: rt(exited("c", 137, 0)), Now: now}},
		{"terminal sync of a pod not deleted (evicted, deadline)", Input{Pod: mkPod(v1.RestartPolicyAlways, "c"), Runtime: rt(exited("c", 137, 0)), Terminal: true, Now: now}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(tc.in)
			cs := s.ContainerStatuses[0]
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 {
				t.Fatalf("state = %+v, want terminated with exit code 137", cs.State)
			}
		})
	}
}

// Debug containers get their own statuses: waiting until created,
// running, and terminated for good once exited (they are never restarted,
// whatever the pod's restart policy), without started or ready.
func TestEphemeralContainerStatuses(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, "app")
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "new", Image: "busybox:1.36"}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"}, TargetContainerName: "app"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "done", Image: "busybox:1.36"}},
	}
	s := Generate(Input{Pod: p, Runtime: rt(running("app"), running("debug"), exited("done", 0, 0)), Now: now})
	if len(s.EphemeralContainerStatuses) != 3 {
		t.Fatalf("ephemeral statuses = %+v, want 3", s.EphemeralContainerStatuses)
	}
	byName := map[string]v1.ContainerStatus{}
	for _, cs := range s.EphemeralContainerStatuses {
		byName[cs.Name] = cs
		if cs.Started != nil || cs.Ready {
			t.Errorf("%s: started %v ready %v, want neither", cs.Name, cs.Started, cs.Ready)
		}
	}
	if w := byName["new"].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Errorf("new: state %+v, want waiting ContainerCreating", byName["new"].State)
	}
	if byName["debug"].State.Running == nil || byName["debug"].ContainerID != "containerd://debug1" {
		t.Errorf("debug: %+v, want running containerd://debug1", byName["debug"])
	}
	if term := byName["done"].State.Terminated; term == nil || term.Reason != "Completed" {
		t.Errorf("done: state %+v, want terminated Completed", byName["done"].State)
	}
	// Debug containers take no part in the pod's readiness or phase.
	if s.Phase != v1.PodRunning || cond(s, v1.PodReady).Status != v1.ConditionTrue {
		t.Errorf("phase %s ready %s, want Running and True", s.Phase, cond(s, v1.PodReady).Status)
	}
}
