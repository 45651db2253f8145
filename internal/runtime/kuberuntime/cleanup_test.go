package kuberuntime

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// fakeIDs lists the fake runtime's container and sandbox IDs, sorted.
func fakeIDs(e *env) (containers, sandboxes []string) {
	e.cri.Runtime.Lock()
	defer e.cri.Runtime.Unlock()
	for id := range e.cri.Runtime.Containers {
		containers = append(containers, id)
	}
	for id := range e.cri.Runtime.Sandboxes {
		sandboxes = append(sandboxes, id)
	}
	sort.Strings(containers)
	sort.Strings(sandboxes)
	return containers, sandboxes
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// RemovePod removes everything of a terminated pod: its containers, their
// /var/log/containers links, its sandboxes, its volumes, its directory,
// its log directory and its cgroup.
func TestRemovePod(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name  string
		setup func(e *env)
		// wantErr is RemovePod's error ("" for none); on error what remains
		// is left for the next attempt.
		wantErr string
	}{
		{name: "everything removed"},
		{name: "a container that cannot be removed", setup: func(e *env) { e.cri.Runtime.InjectError("RemoveContainer", boom) },
			wantErr: "remove container foo_new_12345678_0_foo1_0 of pod new/foo: rpc error: code = Unknown desc = boom"},
		{name: "a sandbox that cannot be removed", setup: func(e *env) { e.cri.Runtime.InjectError("RemovePodSandbox", boom) },
			wantErr: "remove sandbox foo_new_12345678_0 of pod new/foo: rpc error: code = Unknown desc = boom"},
		{name: "volumes that cannot be torn down", setup: func(e *env) {
			e.m.cfg.TearDownVolumes = func(string) error { return boom }
		}, wantErr: "tear down volumes of pod new/foo: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tornDown []string
			cgroups := &fakeCgroups{}
			e := newEnv(t, func(c *Config, _ *ImageConfig) {
				c.PodCgroups = cgroups
				c.TearDownVolumes = func(uid string) error { tornDown = append(tornDown, uid); return nil }
			})
			pod := newPod("foo1")
			pod.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
			e.sync(pod, nil)
			if err := e.m.KillPod(e.ctx, pod, e.status(pod), nil); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(e.cfg.ContainerLogsDir, "foo_new_foo1-"+containerID(pod, 0, "foo1", 0)+".log")
			podDir := e.m.PodDir(pod.UID)
			logDir := criconfig.PodLogDir(e.cfg.Spec.PodLogsDir, pod.Namespace, pod.Name, pod.UID)
			for _, p := range []string{link, podDir, logDir} {
				if !exists(p) {
					t.Fatalf("%s missing before RemovePod", p)
				}
			}
			if tc.setup != nil {
				tc.setup(e)
			}
			err := e.m.RemovePod(e.ctx, e.status(pod))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cs, sbs := fakeIDs(e); len(cs)+len(sbs) != 0 {
				t.Errorf("left on the runtime: containers %v sandboxes %v", cs, sbs)
			}
			for _, p := range []string{link, podDir, logDir} {
				if exists(p) {
					t.Errorf("%s left behind", p)
				}
			}
			if !reflect.DeepEqual(tornDown, []string{"12345678"}) || !reflect.DeepEqual(cgroups.removed, []types.UID{"12345678"}) {
				t.Errorf("volumes torn down for %v, cgroups removed for %v", tornDown, cgroups.removed)
			}
		})
	}
}

// PruneContainers keeps the newest dead instances of each container (as
// the container GC's MaxPerPodContainer), never young ones, and removes
// dead sandboxes no container needs.
func TestPruneContainers(t *testing.T) {
	cases := []struct {
		name   string
		keep   int
		minAge time.Duration
		want   []string // container IDs left (attempts of foo1 in sandbox 0 unless noted)
	}{
		{name: "keep 1: the newest dead instance and the running one", keep: 1,
			want: []string{"foo_new_12345678_0_foo1_2", "foo_new_12345678_0_foo1_3"}},
		{name: "keep 0: only the running one", keep: 0, want: []string{"foo_new_12345678_0_foo1_3"}},
		{name: "negative keep: every instance", keep: -1,
			want: []string{"foo_new_12345678_0_foo1_0", "foo_new_12345678_0_foo1_1", "foo_new_12345678_0_foo1_2", "foo_new_12345678_0_foo1_3"}},
		// Created 6m, 12m and 18m ago.
		{name: "dead instances younger than the minimum age are kept", keep: 0, minAge: 7 * time.Minute,
			want: []string{"foo_new_12345678_0_foo1_2", "foo_new_12345678_0_foo1_3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config, _ *ImageConfig) { c.DeadContainerMinAge = tc.minAge })
			pod := newPod("foo1")
			e.sync(pod, nil)
			for attempt := uint32(0); attempt < 3; attempt++ { // three crashes a minute apart
				e.clk.Step(time.Minute)
				e.exit(pod, 0, "foo1", attempt, 1)
				e.clk.Step(5 * time.Minute) // past the crash-loop back-off
				e.sync(pod, nil)
			}
			e.m.PruneContainers(e.ctx, e.status(pod), tc.keep)
			if cs, _ := fakeIDs(e); !reflect.DeepEqual(cs, tc.want) {
				t.Errorf("containers left %v, want %v", cs, tc.want)
			}
		})
	}

	t.Run("dead sandboxes other than the newest are removed once unused", func(t *testing.T) {
		e := newEnv(t, nil)
		pod := newPod("foo1")
		e.sync(pod, nil)
		for i := uint32(0); i < 2; i++ { // the sandbox dies twice
			e.clk.Step(time.Minute)
			e.cri.Runtime.StopPodSandbox(e.ctx, sandboxID(pod, i))
			e.sync(pod, nil)
		}
		e.m.PruneContainers(e.ctx, e.status(pod), 0)
		cs, sbs := fakeIDs(e)
		if want := []string{"foo_new_12345678_2_foo1_2"}; !reflect.DeepEqual(cs, want) {
			t.Errorf("containers %v, want %v", cs, want)
		}
		if want := []string{"foo_new_12345678_2"}; !reflect.DeepEqual(sbs, want) {
			t.Errorf("sandboxes %v, want %v", sbs, want)
		}
	})
}

// CleanupOrphanedPodDirs removes the pod and pod-log directories of pods
// not kept, and leaves the others (and what is not a pod log dir) alone,
// as well as a pod directory whose plugin volumes wait for their teardown.
func TestCleanupOrphanedPodDirs(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *ImageConfig) {
		c.PodHasVolumes = func(uid string) bool { return uid == "csi-pending" }
	})
	pods, logs := e.cfg.PodsDir, e.cfg.Spec.PodLogsDir
	kept := []string{filepath.Join(pods, "kept", "volumes"), filepath.Join(logs, "ns_a_kept"), filepath.Join(logs, "not-a-pod-dir"),
		filepath.Join(pods, "csi-pending", "volumes", "kubernetes.io~csi", "pv", "vol_data.json")}
	gone := []string{filepath.Join(pods, "gone"), filepath.Join(logs, "ns_b_gone2")}
	for _, d := range append(append([]string{}, kept...), gone...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.m.CleanupOrphanedPodDirs(map[types.UID]bool{"kept": true})
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", d, err)
		}
	}
	for _, d := range gone {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", d, err)
		}
	}
}

// The kubelet's per-container files: /etc/hosts (rendered, managed by the
// kubelet) and the termination log (world-writable so any user can write
// it), both mounted unless a volume already sits there, and the
// /var/log/containers link log shippers read.
func TestContainerFiles(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *ImageConfig) {
		c.Mounts = func(_ *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
			if c.Name == "own" {
				return []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/srv/hosts"}, {ContainerPath: "/dev/termination-log", HostPath: "/srv/term"}}, nil
			}
			return nil, nil
		}
	})
	pod := newPod("foo1", "own")
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].TerminationMessagePath = "/dev/termination-log"
	}
	e.sync(pod, nil)

	mounts := map[string]string{}
	for _, m := range e.containerMounts(containerID(pod, 0, "foo1", 0)) {
		mounts[m.ContainerPath] = m.HostPath
	}
	hosts := mounts["/etc/hosts"]
	if hosts != filepath.Join(e.m.PodDir(pod.UID), "etc-hosts") {
		t.Fatalf("/etc/hosts from %q", hosts)
	}
	data, err := os.ReadFile(hosts)
	if err != nil || !strings.Contains(string(data), "192.168.192.168\tfoo") || !strings.HasPrefix(string(data), "# Kubernetes-managed hosts file.") {
		t.Errorf("hosts file %q (%v)", data, err)
	}
	term := mounts["/dev/termination-log"]
	if fi, err := os.Stat(term); err != nil || fi.Mode().Perm() != 0o666 || !strings.HasPrefix(term, filepath.Join(e.m.PodDir(pod.UID), "containers", "foo1")) {
		t.Errorf("termination log %q: %v %v", term, fi, err)
	}
	own := map[string]string{}
	for _, m := range e.containerMounts(containerID(pod, 0, "own", 0)) {
		own[m.ContainerPath] = m.HostPath
	}
	if want := map[string]string{"/etc/hosts": "/srv/hosts", "/dev/termination-log": "/srv/term"}; !reflect.DeepEqual(own, want) {
		t.Errorf("a container with its own volumes there got %v, want %v", own, want)
	}
	link := filepath.Join(e.cfg.ContainerLogsDir, "foo_new_foo1-"+containerID(pod, 0, "foo1", 0)+".log")
	target, err := os.Readlink(link)
	if want := filepath.Join(criconfig.PodLogDir(e.cfg.Spec.PodLogsDir, "new", "foo", "12345678"), "foo1", "0.log"); err != nil || target != want {
		t.Errorf("log link %s -> %q (%v), want %q", link, target, err, want)
	}
}
