package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/runtimeclass"
)

// syncWant is what one SyncPod through the fake CRI must do.
type syncWant struct {
	// calls are the runtime calls, in order (nil: none).
	calls []string
	// started are the containers the sync started.
	started []string
	// failures are the waiting reasons by container.
	failures map[string]string
	// events are the events the sync recorded, in order; nil skips the check.
	events []string
	// running are the container attempts running afterwards ("name/sandboxAttempt/attempt").
	running []string
	// err is a substring of the sync's error ("" for none).
	err     string
	changed bool
	requeue time.Duration
}

type fakeCgroups struct {
	parent  string
	err     error
	removed []types.UID
}

func (f *fakeCgroups) EnsurePod(*v1.Pod) (string, error) { return f.parent, f.err }
func (f *fakeCgroups) RemovePod(uid types.UID) error {
	f.removed = append(f.removed, uid)
	return f.err
}

// hookCall is one RunHook call.
type hookCall struct {
	container, containerID, podIP string
	timeout                       time.Duration
}

// TestSyncPod drives SyncPod through the fake CRI, a named case per
// situation; upstream's TestSyncPod, TestKillPod and TestComputePodActions
// give the shapes (a new pod gets one ready sandbox and every container
// running; a dead sandbox kills and re-creates everything).
func TestSyncPod(t *testing.T) {
	boom := errors.New("boom")
	var hooks []hookCall
	recordHook := func(err error) func(context.Context, *v1.LifecycleHandler, *v1.Container, string, string, time.Duration) error {
		return func(_ context.Context, _ *v1.LifecycleHandler, c *v1.Container, id, ip string, timeout time.Duration) error {
			hooks = append(hooks, hookCall{c.Name, id, ip, timeout})
			return err
		}
	}
	postStart := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		return p
	}
	cgroups := &fakeCgroups{parent: "/kubepods/besteffort/pod12345678"}
	five := int64(5)

	cases := []struct {
		name      string
		pod       *v1.Pod
		mutate    func(*Config, *ImageConfig)
		setup     func(e *env, pod *v1.Pod)
		unhealthy func(pod *v1.Pod) map[string]Unhealthy
		want      syncWant
		check     func(t *testing.T, e *env, pod *v1.Pod)
	}{
		{
			name: "new pod: sandbox created, missing images pulled, every container started",
			pod:  newPod("foo1", "foo2"),
			want: syncWant{
				calls:   []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer", "CreateContainer", "StartContainer"},
				started: []string{"foo1", "foo2"},
				events: []string{
					`Normal Pulling Pulling image "busybox"`,
					`Normal Pulled Successfully pulled image "busybox" in 0s (0s including waiting). Image size: 0 bytes.`,
					`Normal Created Created container: foo1`,
					`Normal Started Started container foo1`,
					`Normal Pulled Container image "busybox" already present on machine`,
					`Normal Created Created container: foo2`,
					`Normal Started Started container foo2`,
				},
				running: []string{"foo1/0/0", "foo2/0/0"},
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				if st, _ := e.cri.SandboxState(sandboxID(pod, 0)); st != runtimeapi.PodSandboxState_SANDBOX_READY {
					t.Errorf("sandbox state %v, want ready", st)
				}
			},
		},
		{
			name:  "running pod: nothing to do",
			pod:   newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) { e.sync(pod, nil) },
			want:  syncWant{running: []string{"foo1/0/0"}},
		},
		{
			name: "image already present: not pulled",
			pod:  newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) {
				e.cri.Images.SetFakeImages([]string{"busybox"})
			},
			want: syncWant{
				calls:   []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				started: []string{"foo1"},
				events: []string{
					`Normal Pulled Container image "busybox" already present on machine`,
					`Normal Created Created container: foo1`,
					`Normal Started Started container foo1`,
				},
				running: []string{"foo1/0/0"},
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				if pulls := e.cri.Pulls(); len(pulls) != 0 {
					t.Errorf("pulled %v", pulls)
				}
			},
		},
		{
			name: "exited container: restarted as the next attempt in the same sandbox",
			pod:  newPod("foo1", "foo2"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.clk.Step(5 * time.Second)
				e.exit(pod, 0, "foo1", 0, 1)
			},
			want: syncWant{
				calls:   []string{"CreateContainer", "StartContainer"},
				started: []string{"foo1"},
				running: []string{"foo1/0/1", "foo2/0/0"},
				changed: true,
			},
		},
		{
			name: "dead sandbox: containers killed, sandbox re-created as the next attempt",
			pod:  newPod("foo1", "foo2"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.clk.Step(time.Second)
				e.cri.Runtime.StopPodSandbox(e.ctx, sandboxID(pod, 0))
			},
			want: syncWant{
				calls: []string{"StopContainer", "StopContainer", "RunPodSandbox", "PodSandboxStatus",
					"CreateContainer", "StartContainer", "CreateContainer", "StartContainer"},
				started: []string{"foo1", "foo2"},
				running: []string{"foo1/1/1", "foo2/1/1"},
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				if st, _ := e.cri.ContainerState(containerID(pod, 0, "foo1", 0)); st != runtimeapi.ContainerState_CONTAINER_EXITED {
					t.Errorf("old foo1 is %v, want exited", st)
				}
			},
		},
		{
			name: "failed liveness probe: killed with the probe's grace period and restarted",
			pod:  newPod("foo1", "foo2"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.clk.Step(time.Minute)
			},
			unhealthy: func(pod *v1.Pod) map[string]Unhealthy {
				return map[string]Unhealthy{"foo1": {ContainerID: containerID(pod, 0, "foo1", 0),
					Message: "Container foo1 failed liveness probe, will be restarted", GracePeriod: &five}}
			},
			want: syncWant{
				calls:   []string{"StopContainer", "CreateContainer", "StartContainer"},
				started: []string{"foo1"},
				events: []string{
					`Normal Killing Container foo1 failed liveness probe, will be restarted`,
					`Normal Pulled Container image "busybox" already present on machine`,
					`Normal Created Created container: foo1`,
					`Normal Started Started container foo1`,
				},
				running: []string{"foo1/0/1", "foo2/0/0"},
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				want := []stop{{containerID(pod, 0, "foo1", 0), 5}}
				if got := stops(e); !reflect.DeepEqual(got, want) {
					t.Errorf("stops %v, want %v", got, want)
				}
			},
		},
		{
			name: "changed container spec: killed and re-created with the new image",
			pod:  newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				pod.Spec.Containers[0].Image = "busybox:1.37"
			},
			want: syncWant{
				calls:   []string{"StopContainer", "CreateContainer", "StartContainer"},
				started: []string{"foo1"},
				events: []string{
					`Normal Killing Container foo1 definition changed`,
					`Normal Pulling Pulling image "busybox:1.37"`,
					`Normal Pulled Successfully pulled image "busybox:1.37" in 0s (0s including waiting). Image size: 0 bytes.`,
					`Normal Created Created container: foo1`,
					`Normal Started Started container foo1`,
				},
				running: []string{"foo1/0/1"},
				changed: true,
			},
		},
		{
			name: "restartPolicy Never, every container exited: the sandbox is stopped, nothing restarts",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				return p
			}(),
			setup: func(e *env, pod *v1.Pod) {
				e.sync(pod, nil)
				e.clk.Step(time.Second)
				e.exit(pod, 0, "foo1", 0, 0)
			},
			want: syncWant{calls: []string{"StopPodSandbox"}, changed: true},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				if st, _ := e.cri.SandboxState(sandboxID(pod, 0)); st != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
					t.Errorf("sandbox %v, want not ready", st)
				}
			},
		},
		{
			name: "sandbox creation fails: FailedCreatePodSandBox, nothing else",
			pod:  newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) {
				e.cri.Runtime.InjectError("RunPodSandbox", boom)
			},
			want: syncWant{
				calls:   []string{"RunPodSandbox"},
				events:  []string{`Warning FailedCreatePodSandBox Failed to create pod sandbox: rpc error: code = Unknown desc = boom`},
				err:     "create pod sandbox: rpc error: code = Unknown desc = boom",
				changed: true,
			},
		},
		{
			name: "container creation fails: CreateContainerError for it, the others still start",
			pod:  newPod("foo1", "foo2"),
			setup: func(e *env, pod *v1.Pod) {
				e.cri.Images.SetFakeImages([]string{"busybox"})
				e.cri.Runtime.InjectError("CreateContainer", boom)
			},
			want: syncWant{
				calls:    []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "CreateContainer", "StartContainer"},
				started:  []string{"foo2"},
				failures: map[string]string{"foo1": ReasonCreateContainerError},
				events: []string{
					`Normal Pulled Container image "busybox" already present on machine`,
					`Warning Failed Error: rpc error: code = Unknown desc = boom`,
					`Normal Pulled Container image "busybox" already present on machine`,
					`Normal Created Created container: foo2`,
					`Normal Started Started container foo2`,
				},
				running: []string{"foo2/0/0"},
				err:     `container "foo1": CreateContainerError: rpc error: code = Unknown desc = boom`,
				changed: true,
			},
		},
		{
			name: "container start fails: RunContainerError",
			pod:  newPod("foo1"),
			setup: func(e *env, pod *v1.Pod) {
				e.cri.Runtime.InjectError("StartContainer", boom)
			},
			want: syncWant{
				calls:    []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				failures: map[string]string{"foo1": ReasonRunContainerError},
				err:      "RunContainerError",
				changed:  true,
			},
		},
		{
			name: "runAsNonRoot with an image that runs as root: CreateContainerConfigError, nothing created",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				yes := true
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: &yes}
				return p
			}(),
			want: syncWant{
				calls:    []string{"RunPodSandbox", "PodSandboxStatus"},
				failures: map[string]string{"foo1": ReasonCreateConfigError},
				err:      `container has runAsNonRoot and image will run as root (pod: "foo_new(12345678)", container: foo1)`,
				changed:  true,
			},
		},
		{
			name: "volume mounts cannot be computed: CreateContainerConfigError",
			pod:  newPod("foo1"),
			mutate: func(c *Config, _ *ImageConfig) {
				c.Mounts = func(*v1.Pod, *v1.Container) ([]*runtimeapi.Mount, error) { return nil, boom }
			},
			want: syncWant{
				calls:    []string{"RunPodSandbox", "PodSandboxStatus"},
				failures: map[string]string{"foo1": ReasonCreateConfigError},
				err:      "boom",
				changed:  true,
			},
		},
		{
			name:   "postStart hook: runs with the container's ID, the pod IP and the grace period",
			pod:    postStart(newPod("foo1")),
			mutate: func(c *Config, _ *ImageConfig) { hooks = nil; c.RunHook = recordHook(nil) },
			want: syncWant{
				calls:   []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				started: []string{"foo1"},
				running: []string{"foo1/0/0"},
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				want := []hookCall{{"foo1", containerID(pod, 0, "foo1", 0), "192.168.192.168", 30 * time.Second}}
				if !reflect.DeepEqual(hooks, want) {
					t.Errorf("hooks %+v, want %+v", hooks, want)
				}
			},
		},
		{
			name:   "postStart hook fails: the container is killed, PostStartHookError",
			pod:    postStart(newPod("foo1")),
			mutate: func(c *Config, _ *ImageConfig) { hooks = nil; c.RunHook = recordHook(boom) },
			want: syncWant{
				calls:    []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer", "StopContainer"},
				failures: map[string]string{"foo1": ReasonPostStartHookError},
				events: []string{
					`Normal Pulling Pulling image "busybox"`,
					`Normal Pulled Successfully pulled image "busybox" in 0s (0s including waiting). Image size: 0 bytes.`,
					`Normal Created Created container: foo1`,
					`Normal Started Started container foo1`,
					`Warning FailedPostStartHook PostStartHook failed: boom`,
					`Normal Killing FailedPostStartHook`,
				},
				err:     "PostStartHookError: PostStartHook failed: boom",
				changed: true,
			},
		},
		{
			name:   "pod cgroup: the sandbox's cgroup parent is the pod's cgroup",
			pod:    newPod("foo1"),
			mutate: func(c *Config, _ *ImageConfig) { c.PodCgroups = cgroups },
			want: syncWant{
				calls:   []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
				started: []string{"foo1"},
				running: []string{"foo1/0/0"},
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				runs := e.cri.SandboxRuns()
				if len(runs) != 1 || runs[0].Config.GetLinux().GetCgroupParent() != cgroups.parent {
					t.Errorf("sandbox runs %v, want one with cgroup parent %s", runs, cgroups.parent)
				}
			},
		},
		{
			name: "pod cgroup cannot be made: no sandbox",
			pod:  newPod("foo1"),
			mutate: func(c *Config, _ *ImageConfig) {
				c.PodCgroups = &fakeCgroups{err: boom}
			},
			want: syncWant{err: "failed to ensure that the pod: 12345678 cgroups exist and are correctly applied: boom", changed: true},
		},
		{
			name: "runtime class: the sandbox runs with the class's handler",
			pod:  withRuntimeClass(newPod("foo1"), "test"),
			mutate: func(c *Config, _ *ImageConfig) {
				c.RuntimeClasses = fakeRuntimeClasses{"test": "runc-test"}
			},
			setup: func(e *env, pod *v1.Pod) { e.cri.Images.SetFakeImages([]string{"busybox"}) },
			want: syncWant{
				calls: []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"}, started: []string{"foo1"},
				running: []string{"foo1/0/0"}, changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				if runs := e.cri.SandboxRuns(); len(runs) != 1 || runs[0].RuntimeHandler != "runc-test" {
					t.Errorf("RunPodSandbox requests %v, want one with handler runc-test", runs)
				}
			},
		},
		{
			// Upstream: createPodSandbox fails with the lister's NotFound,
			// recorded as FailedCreatePodSandBox; the pod stays pending.
			name: "unknown runtime class: no sandbox, FailedCreatePodSandBox as upstream",
			pod:  withRuntimeClass(newPod("foo1"), "gone"),
			mutate: func(c *Config, _ *ImageConfig) {
				c.RuntimeClasses = fakeRuntimeClasses{"test": "runc-test"}
			},
			want: syncWant{
				events:  []string{`Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found`},
				err:     `create pod sandbox: runtimeclass.node.k8s.io "gone" not found`,
				changed: true,
			},
		},
		{
			// Upstream has no runtimeclass manager without an API server
			// and runs the pod with the default handler; we say so.
			name:  "runtime class without an API server: default handler and a warning",
			pod:   withRuntimeClass(newPod("foo1"), "test"),
			setup: func(e *env, pod *v1.Pod) { e.cri.Images.SetFakeImages([]string{"busybox"}) },
			want: syncWant{
				calls: []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"}, started: []string{"foo1"},
				events: []string{
					`Warning UnsupportedField runtimeClassName "test" is ignored: without an API server there are no RuntimeClasses to resolve it, so the pod runs with the runtime's default handler (as upstream's kubelet does)`,
					`Normal Pulled Container image "busybox" already present on machine`,
					`Normal Created Created container: foo1`,
					`Normal Started Started container foo1`,
				},
				running: []string{"foo1/0/0"}, changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				if runs := e.cri.SandboxRuns(); len(runs) != 1 || runs[0].RuntimeHandler != "" {
					t.Errorf("RunPodSandbox requests %v, want the default handler", runs)
				}
			},
		},
		{
			// Upstream's createPodSandbox fails with the config error and
			// SyncPod records it as "Failed to create pod sandbox: <err>".
			name: "a sandbox config that cannot be made: FailedCreatePodSandBox, as upstream",
			pod: func() *v1.Pod {
				p := newPod("foo1")
				p.Spec.Hostname = "Not_A_DNS_Label"
				return p
			}(),
			want: syncWant{
				err:     "generate sandbox config",
				changed: true,
			},
			check: func(t *testing.T, e *env, pod *v1.Pod) {
				evs := e.events()
				if len(evs) != 1 || !strings.HasPrefix(evs[0], `Warning FailedCreatePodSandBox Failed to create pod sandbox: pod Hostname "Not_A_DNS_Label" is not a valid DNS label: a lowercase RFC 1123 label`) {
					t.Errorf("events %q", evs)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.mutate)
			pod := tc.pod.DeepCopy()
			if tc.setup != nil {
				tc.setup(e, pod)
			}
			var unhealthy map[string]Unhealthy
			if tc.unhealthy != nil {
				unhealthy = tc.unhealthy(pod)
			}
			res := e.sync(pod, unhealthy)
			checkSync(t, e, pod, res, tc.want)
			if tc.check != nil {
				tc.check(t, e, pod)
			}
		})
	}
}

// checkSync compares one sync's result and effects with want.
func checkSync(t *testing.T, e *env, pod *v1.Pod, res SyncResult, want syncWant) {
	t.Helper()
	if got := e.cri.Calls(); !reflect.DeepEqual(got, want.calls) {
		t.Errorf("runtime calls\n got %v\nwant %v", got, want.calls)
	}
	if !reflect.DeepEqual(res.Started, want.started) && (len(res.Started) != 0 || len(want.started) != 0) {
		t.Errorf("started %v, want %v", res.Started, want.started)
	}
	failures := map[string]string{}
	for name, f := range res.Failures {
		failures[name] = f.Reason
	}
	if len(failures) != 0 || len(want.failures) != 0 {
		if !reflect.DeepEqual(failures, want.failures) {
			t.Errorf("failures %v, want %v", res.Failures, want.failures)
		}
	}
	if want.events != nil {
		if got := e.events(); !reflect.DeepEqual(got, want.events) {
			t.Errorf("events\n got %q\nwant %q", got, want.events)
		}
	}
	switch {
	case want.err == "" && res.Err != nil:
		t.Errorf("error %v, want none", res.Err)
	case want.err != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), want.err)):
		t.Errorf("error %v, want one containing %q", res.Err, want.err)
	}
	if res.Changed != want.changed {
		t.Errorf("changed %v, want %v", res.Changed, want.changed)
	}
	if res.RequeueAfter != want.requeue {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, want.requeue)
	}
	if got := running(e, pod); !reflect.DeepEqual(got, want.running) && (len(got) != 0 || len(want.running) != 0) {
		t.Errorf("running %v, want %v", got, want.running)
	}
}

// running lists the pod's running container attempts as
// "name/sandboxAttempt/attempt", sorted.
func running(e *env, pod *v1.Pod) []string {
	e.cri.Runtime.Lock()
	defer e.cri.Runtime.Unlock()
	var out []string
	for _, c := range e.cri.Runtime.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		sb := e.cri.Runtime.Sandboxes[c.SandboxID]
		out = append(out, fmt.Sprintf("%s/%d/%d", c.Metadata.Name, sb.Metadata.Attempt, c.Metadata.Attempt))
	}
	sort.Strings(out)
	return out
}

type stop struct {
	id      string
	timeout int64
}

func stops(e *env) []stop {
	var out []stop
	for _, s := range e.cri.Stops() {
		out = append(out, stop{s.ID, s.Timeout})
	}
	return out
}

// fakeRuntimeClasses resolves class names to handlers; others are unknown.
type fakeRuntimeClasses map[string]string

func (f fakeRuntimeClasses) LookupRuntimeHandler(_ context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	h, ok := f[*name]
	if !ok {
		return "", runtimeclass.NotFound(*name)
	}
	return h, nil
}

func withRuntimeClass(p *v1.Pod, name string) *v1.Pod {
	p.Spec.RuntimeClassName = &name
	return p
}
