package kuberuntime

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// step is one moment in a pod's life: something happens (do), then the
// pod is synced once and the sync must do want.
type step struct {
	name string
	do   func(e *env, pod *v1.Pod)
	want syncWant
}

func runSteps(t *testing.T, e *env, pod *v1.Pod, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.do != nil {
			s.do(e, pod)
		}
		res := e.sync(pod, nil)
		t.Run(fmt.Sprintf("%d %s", i+1, s.name), func(t *testing.T) { checkSync(t, e, pod, res, s.want) })
	}
}

// As upstream's TestSyncPodWithInitContainers: init containers run one at
// a time before the app containers, and a new sandbox runs them again.
func TestSyncPodWithInitContainers(t *testing.T) {
	e := newEnv(t, nil)
	pod := addInit(newPod("foo1", "foo2"), false, "init1")
	runSteps(t, e, pod, []step{
		{
			name: "only the init container starts",
			want: syncWant{calls: []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				started: []string{"init1"}, running: []string{"init1/0/0"}, changed: true},
		},
		{
			name: "init container still running: nothing to do",
			want: syncWant{running: []string{"init1/0/0"}},
		},
		{
			name: "init container completed: every app container starts",
			do: func(e *env, pod *v1.Pod) {
				e.clk.Step(time.Second)
				e.exit(pod, 0, "init1", 0, 0)
			},
			want: syncWant{calls: []string{"CreateContainer", "StartContainer", "CreateContainer", "StartContainer"},
				started: []string{"foo1", "foo2"}, running: []string{"foo1/0/0", "foo2/0/0"}, changed: true},
		},
		{
			name: "sandbox died: app containers killed, the init container runs again in a new sandbox",
			do: func(e *env, pod *v1.Pod) {
				e.clk.Step(time.Second)
				e.cri.Runtime.StopPodSandbox(e.ctx, sandboxID(pod, 0))
			},
			want: syncWant{calls: []string{"StopContainer", "StopContainer", "RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				started: []string{"init1"}, running: []string{"init1/1/1"}, changed: true},
		},
	})
}

func TestSyncPodInitContainerFailure(t *testing.T) {
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		want   syncWant
	}{
		{
			name:   "restartPolicy Always: the failed init container is retried",
			policy: v1.RestartPolicyAlways,
			want: syncWant{calls: []string{"CreateContainer", "StartContainer"}, started: []string{"init1"},
				running: []string{"init1/0/1"}, changed: true},
		},
		{
			name:   "restartPolicy OnFailure: the failed init container is retried",
			policy: v1.RestartPolicyOnFailure,
			want: syncWant{calls: []string{"CreateContainer", "StartContainer"}, started: []string{"init1"},
				running: []string{"init1/0/1"}, changed: true},
		},
		{
			name:   "restartPolicy Never: the pod fails, its sandbox is stopped",
			policy: v1.RestartPolicyNever,
			want:   syncWant{calls: []string{"StopPodSandbox"}, changed: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			pod := addInit(newPod("foo1"), false, "init1", "init2")
			pod.Spec.RestartPolicy = tc.policy
			e.sync(pod, nil)
			e.clk.Step(time.Second)
			e.exit(pod, 0, "init1", 0, 3)
			checkSync(t, e, pod, e.sync(pod, nil), tc.want)
		})
	}
}

// A restartable init container (sidecar) starts, and once it runs the next
// init container starts; it keeps running beside the app containers and is
// restarted whenever it exits.
func TestSyncPodWithSidecars(t *testing.T) {
	e := newEnv(t, nil)
	pod := addInit(addInit(newPod("app"), true, "side"), false, "init2")
	runSteps(t, e, pod, []step{
		{
			name: "only the sidecar starts",
			want: syncWant{calls: []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				started: []string{"side"}, running: []string{"side/0/0"}, changed: true},
		},
		{
			name: "sidecar running: the next init container starts",
			want: syncWant{calls: []string{"CreateContainer", "StartContainer"},
				started: []string{"init2"}, running: []string{"init2/0/0", "side/0/0"}, changed: true},
		},
		{
			name: "init container completed: the app container starts beside the sidecar",
			do: func(e *env, pod *v1.Pod) {
				e.clk.Step(time.Second)
				e.exit(pod, 0, "init2", 0, 0)
			},
			want: syncWant{calls: []string{"CreateContainer", "StartContainer"},
				started: []string{"app"}, running: []string{"app/0/0", "side/0/0"}, changed: true},
		},
		{
			name: "sidecar exited: restarted, even with exit code 0",
			do: func(e *env, pod *v1.Pod) {
				e.clk.Step(time.Second)
				e.exit(pod, 0, "side", 0, 0)
			},
			want: syncWant{calls: []string{"CreateContainer", "StartContainer"},
				started: []string{"side"}, running: []string{"app/0/0", "side/0/1"}, changed: true},
		},
	})
}
