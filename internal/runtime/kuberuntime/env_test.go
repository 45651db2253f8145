package kuberuntime

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
)

// env is a Manager on a fake CRI, with a fake clock and recorder.
type env struct {
	t   *testing.T
	ctx context.Context
	clk *testingclock.FakeClock
	cri *critest.Server
	rec *record.FakeRecorder
	m   *Manager
	cfg Config
	dir string
}

// newEnv builds a Manager; mutate adjusts its Config (and the puller's).
func newEnv(t *testing.T, mutate func(*Config, *ImageConfig)) *env {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cri := critest.New(t, clk)
	rec := record.NewFakeRecorder(1000)
	dir := t.TempDir()
	icfg := ImageConfig{Images: cri.ImageClient, Clock: clk, Recorder: rec}
	cfg := Config{
		Runtime: cri.RuntimeClient, Clock: clk, Recorder: rec,
		Spec:             criconfig.Options{PodLogsDir: filepath.Join(dir, "logs"), NodeName: "node1"},
		PodsDir:          filepath.Join(dir, "pods"),
		ContainerLogsDir: filepath.Join(dir, "containers"),
	}
	if mutate != nil {
		mutate(&cfg, &icfg)
	}
	cfg.Images = NewImagePuller(icfg)
	return &env{t: t, ctx: context.Background(), clk: clk, cri: cri, rec: rec, m: NewManager(cfg), cfg: cfg, dir: dir}
}

// status reads the pod's runtime status through the manager.
func (e *env) status(pod *v1.Pod) *PodStatus {
	e.t.Helper()
	st, err := e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		e.t.Fatalf("GetPodStatus: %v", err)
	}
	return st
}

// sync reads the pod's status and syncs it once, forgetting the calls and
// events that came before, so the caller sees only this sync's.
func (e *env) sync(pod *v1.Pod, unhealthy map[string]Unhealthy) SyncResult {
	e.t.Helper()
	st := e.status(pod)
	e.reset()
	return e.m.SyncPod(e.ctx, Inputs{Pod: pod, Status: st, Unhealthy: unhealthy})
}

// reset forgets the calls, stops, pulls and events so far.
func (e *env) reset() {
	e.cri.Calls()
	e.cri.ImageCalls()
	e.cri.Stops()
	e.cri.Pulls()
	e.cri.SandboxRuns()
	e.events()
}

// events drains the recorded events ("Type Reason Message").
func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// state is the fake's state of the container attempt in the pod's sandbox
// attempt, "" when it does not exist.
func (e *env) state(pod *v1.Pod, sandboxAttempt uint32, name string, attempt uint32) string {
	id := critest.ContainerID(sandboxID(pod, sandboxAttempt), name, attempt)
	s, ok := e.cri.ContainerState(id)
	if !ok {
		return ""
	}
	return s.String()
}

// exit makes the container attempt exit with code at the current time.
func (e *env) exit(pod *v1.Pod, sandboxAttempt uint32, name string, attempt uint32, code int32) {
	e.cri.ExitContainer(critest.ContainerID(sandboxID(pod, sandboxAttempt), name, attempt), code)
}

func sandboxID(pod *v1.Pod, attempt uint32) string {
	return critest.SandboxID(pod.Name, pod.Namespace, string(pod.UID), attempt)
}

func containerID(pod *v1.Pod, sandboxAttempt uint32, name string, attempt uint32) string {
	return critest.ContainerID(sandboxID(pod, sandboxAttempt), name, attempt)
}

// newPod is a pod of containers named after their images ("name=image"
// pairs are not needed: every container runs busybox unless changed).
func newPod(containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "new", UID: "12345678"}}
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	p.Spec.DNSPolicy = v1.DNSDefault
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent})
	}
	return p
}

func addInit(p *v1.Pod, sidecar bool, names ...string) *v1.Pod {
	for _, n := range names {
		c := v1.Container{Name: n, Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent}
		if sidecar {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	return p
}

// containerMounts are the mounts the container was created with.
func (e *env) containerMounts(id string) []*runtimeapi.Mount {
	e.cri.Runtime.Lock()
	defer e.cri.Runtime.Unlock()
	if c, ok := e.cri.Runtime.Containers[id]; ok {
		return c.Mounts
	}
	return nil
}
