package kuberuntime

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func int64p(v int64) *int64 { return &v }

func withPreStop(p *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		for _, cs := range [][]v1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				if cs[i].Name == n {
					cs[i].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
				}
			}
		}
	}
	return p
}

// TestKillPod stops a running pod (upstream's TestKillPod: every container
// exited, the sandbox not ready) and checks the stop timeouts each
// container gets: the grace period by upstream's precedence, minus what a
// preStop hook took, never below 2s; sidecars after the app containers.
func TestKillPod(t *testing.T) {
	boom := errors.New("boom")
	// hook is a preStop hook that takes d of the fake clock and fails with err.
	hook := func(d time.Duration, err error, calls *[]hookCall) func(*Config, *ImageConfig) {
		return func(c *Config, _ *ImageConfig) {
			c.RunHook = func(_ context.Context, _ *v1.LifecycleHandler, ctr *v1.Container, id, ip string, timeout time.Duration) error {
				*calls = append(*calls, hookCall{ctr.Name, id, ip, timeout})
				c.Clock.(interface{ Step(time.Duration) }).Step(d)
				return err
			}
		}
	}
	type want struct {
		stops  []stop // in order; app containers stopped at once are sorted by ID
		hooks  []hookCall
		events []string // sorted
		err    string
		// sandboxStopped says whether the sandbox ends not ready.
		sandboxStopped bool
	}
	var hooks []hookCall
	cases := []struct {
		name     string
		pod      *v1.Pod
		mutate   func(*Config, *ImageConfig)
		setup    func(e *env, pod *v1.Pod)
		override *int64
		noSpec   bool // kill as for a pod found on the runtime without its spec
		want     func(pod *v1.Pod) want
	}{
		{
			name: "every running container stopped with the default 30s, then the sandbox",
			pod:  newPod("foo1", "foo2"),
			want: func(pod *v1.Pod) want {
				return want{
					stops:          []stop{{containerID(pod, 0, "foo1", 0), 30}, {containerID(pod, 0, "foo2", 0), 30}},
					events:         []string{"Normal Killing Stopping container foo1", "Normal Killing Stopping container foo2"},
					sandboxStopped: true,
				}
			},
		},
		{
			name: "terminationGracePeriodSeconds is the stop timeout",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				p.Spec.TerminationGracePeriodSeconds = int64p(10)
				return p
			}(),
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo1", 0), 10}}, sandboxStopped: true}
			},
		},
		{
			name: "the deletion grace period wins over the spec's",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				p.Spec.TerminationGracePeriodSeconds = int64p(10)
				p.DeletionGracePeriodSeconds = int64p(5)
				return p
			}(),
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo1", 0), 5}}, sandboxStopped: true}
			},
		},
		{
			name:     "an override (eviction) wins over both",
			pod:      newPod("foo1"),
			override: int64p(3),
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo1", 0), 3}}, sandboxStopped: true}
			},
		},
		{
			name:     "never below the 2s minimum",
			pod:      newPod("foo1"),
			override: int64p(0),
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo1", 0), 2}}, sandboxStopped: true}
			},
		},
		{
			name:   "the preStop hook runs first; its time comes off the stop timeout",
			pod:    withPreStop(newPod("foo1"), "foo1"),
			mutate: hook(7*time.Second, nil, &hooks),
			want: func(pod *v1.Pod) want {
				id := containerID(pod, 0, "foo1", 0)
				return want{stops: []stop{{id, 23}}, hooks: []hookCall{{"foo1", id, "192.168.192.168", 30 * time.Second}}, sandboxStopped: true}
			},
		},
		{
			name:   "a preStop hook that outlasts the grace period leaves the minimum",
			pod:    withPreStop(newPod("foo1"), "foo1"),
			mutate: hook(40*time.Second, nil, &hooks),
			want: func(pod *v1.Pod) want {
				id := containerID(pod, 0, "foo1", 0)
				return want{stops: []stop{{id, 2}}, hooks: []hookCall{{"foo1", id, "192.168.192.168", 30 * time.Second}}, sandboxStopped: true}
			},
		},
		{
			name:   "a failed preStop hook: FailedPreStopHook, the container still stops",
			pod:    withPreStop(newPod("foo1"), "foo1"),
			mutate: hook(time.Second, boom, &hooks),
			want: func(pod *v1.Pod) want {
				id := containerID(pod, 0, "foo1", 0)
				return want{
					stops:          []stop{{id, 29}},
					hooks:          []hookCall{{"foo1", id, "192.168.192.168", 30 * time.Second}},
					events:         []string{"Normal Killing Stopping container foo1", "Warning FailedPreStopHook PreStopHook failed: boom"},
					sandboxStopped: true,
				}
			},
		},
		{
			name: "sidecars stop after the app container, last declared first, within what is left of the grace period",
			pod:  withPreStop(addInit(newPod("app"), true, "side1", "side2"), "app"),
			setup: func(e *env, pod *v1.Pod) {
				for range 3 { // side1, side2, app
					e.sync(pod, nil)
				}
			},
			mutate: hook(10*time.Second, nil, &hooks),
			want: func(pod *v1.Pod) want {
				return want{
					stops: []stop{{containerID(pod, 0, "app", 0), 20}, {containerID(pod, 0, "side2", 0), 20}, {containerID(pod, 0, "side1", 0), 20}},
					hooks: []hookCall{{"app", containerID(pod, 0, "app", 0), "192.168.192.168", 30 * time.Second}},
					events: []string{"Normal Killing Stopping container app", "Normal Killing Stopping container side1",
						"Normal Killing Stopping container side2"},
					sandboxStopped: true,
				}
			},
		},
		{
			name: "without the pod's spec: each container's recorded grace period and preStop hook",
			pod: func() *v1.Pod {
				p := withPreStop(newPod("foo1"), "foo1")
				p.Spec.TerminationGracePeriodSeconds = int64p(12)
				return p
			}(),
			noSpec: true,
			mutate: hook(2*time.Second, nil, &hooks),
			want: func(pod *v1.Pod) want {
				id := containerID(pod, 0, "foo1", 0)
				return want{stops: []stop{{id, 10}}, hooks: []hookCall{{"foo1", id, "192.168.192.168", 12 * time.Second}}, sandboxStopped: true}
			},
		},
		{
			name: "exited containers are not stopped again",
			pod:  newPod("foo1", "foo2"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.exit(pod, 0, "foo1", 0, 0)
			},
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo2", 0), 30}}, sandboxStopped: true}
			},
		},
		{
			name:  "a container that cannot be stopped: the error, and the sandbox keeps running",
			pod:   newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) { e.sync(pod, nil); e.cri.Runtime.InjectError("StopContainer", boom) },
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo1", 0), 30}},
					err: `stop container "foo1" (` + containerID(pod, 0, "foo1", 0) + `): rpc error: code = Unknown desc = boom`}
			},
		},
		{
			name:  "a sandbox that cannot be stopped: the error",
			pod:   newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) { e.sync(pod, nil); e.cri.Runtime.InjectError("StopPodSandbox", boom) },
			want: func(pod *v1.Pod) want {
				return want{stops: []stop{{containerID(pod, 0, "foo1", 0), 30}},
					err: "stop sandbox " + sandboxID(pod, 0) + " of pod new/foo: rpc error: code = Unknown desc = boom"}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hooks = nil
			e := newEnv(t, tc.mutate)
			pod := tc.pod.DeepCopy()
			if tc.setup != nil {
				tc.setup(e, pod)
			} else {
				e.sync(pod, nil)
			}
			hooks = nil
			st := e.status(pod)
			e.reset()
			killed := pod
			if tc.noSpec {
				killed = nil
			}
			err := e.m.KillPod(e.ctx, killed, st, tc.override)
			w := tc.want(pod)
			switch {
			case w.err == "" && err != nil:
				t.Errorf("KillPod: %v", err)
			case w.err != "" && (err == nil || err.Error() != w.err):
				t.Errorf("KillPod error %v, want %q", err, w.err)
			}
			got := stops(e)
			apps := 0
			for _, s := range got {
				if !strings.Contains(s.id, "_side") {
					apps++
				}
			}
			sort.Slice(got[:apps], func(i, j int) bool { return got[i].id < got[j].id })
			if !reflect.DeepEqual(got, w.stops) {
				t.Errorf("stops\n got %v\nwant %v", got, w.stops)
			}
			if !reflect.DeepEqual(hooks, w.hooks) {
				t.Errorf("preStop hooks %+v, want %+v", hooks, w.hooks)
			}
			if w.events != nil {
				evs := e.events()
				sort.Strings(evs)
				if !reflect.DeepEqual(evs, w.events) {
					t.Errorf("events %q, want %q", evs, w.events)
				}
			}
			for _, s := range w.stops {
				if st, _ := e.cri.ContainerState(s.id); w.err == "" && st != runtimeapi.ContainerState_CONTAINER_EXITED {
					t.Errorf("container %s is %v after KillPod, want exited", s.id, st)
				}
			}
			sb, _ := e.cri.SandboxState(sandboxID(pod, 0))
			if stopped := sb == runtimeapi.PodSandboxState_SANDBOX_NOTREADY; stopped != w.sandboxStopped {
				t.Errorf("sandbox %v, want stopped=%v", sb, w.sandboxStopped)
			}
		})
	}
}
