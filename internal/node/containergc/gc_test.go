package containergc

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeRuntime struct {
	containers map[string]*runtimeapi.Container
	sandboxes  map[string]*runtimeapi.PodSandbox
	logPaths   map[string]string
	removed    []string
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		out = append(out, c)
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		out = append(out, s)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if _, ok := f.containers[in.ContainerId]; !ok {
		return nil, status.Error(codes.NotFound, "no such container")
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: in.ContainerId, LogPath: f.logPaths[in.ContainerId]}}, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, in *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	delete(f.containers, in.ContainerId)
	f.removed = append(f.removed, in.ContainerId)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, in *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	delete(f.sandboxes, in.PodSandboxId)
	f.removed = append(f.removed, in.PodSandboxId)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

type pods map[types.UID]bool // known (live) pods

func (p pods) ShouldPodContentBeRemoved(uid types.UID) bool { return !p[uid] }
func (p pods) ShouldPodRuntimeBeRemoved(uid types.UID) bool { return !p[uid] }

func labels(pod, uid, name string) map[string]string {
	l := map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid}
	if name != "" {
		l["io.kubernetes.container.name"] = name
	}
	return l
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGarbageCollectRemovesContainersLogsAndLinks(t *testing.T) {
	dir := t.TempDir()
	podLogs, links := filepath.Join(dir, "pods"), filepath.Join(dir, "containers")
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ns := func(min int) int64 { return now.Add(-time.Duration(min) * time.Minute).UnixNano() }
	liveLog := filepath.Join(podLogs, "default_live_u1", "app")
	rt := &fakeRuntime{
		containers: map[string]*runtimeapi.Container{
			"new":     {Id: "new", PodSandboxId: "s1", Labels: labels("live", "u1", "app"), State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: ns(1)},
			"old":     {Id: "old", PodSandboxId: "s1", Labels: labels("live", "u1", "app"), State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: ns(5)},
			"gone":    {Id: "gone", PodSandboxId: "s2", Labels: labels("deleted", "u2", "app"), State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: ns(5)},
			"foreign": {Id: "foreign", State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: ns(9)},
		},
		sandboxes: map[string]*runtimeapi.PodSandbox{
			"s1": {Id: "s1", Labels: labels("live", "u1", ""), State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: ns(6)},
			"s2": {Id: "s2", Labels: labels("deleted", "u2", ""), State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: ns(6)},
		},
		logPaths: map[string]string{"new": filepath.Join(liveLog, "1.log"), "old": filepath.Join(liveLog, "0.log")},
	}
	touch(t, filepath.Join(liveLog, "1.log"))
	touch(t, filepath.Join(liveLog, "0.log"))
	touch(t, filepath.Join(liveLog, "0.log.20240101-000000.gz"))
	touch(t, filepath.Join(podLogs, "default_deleted_u2", "app", "0.log"))
	os.MkdirAll(links, 0o755)
	os.Symlink(filepath.Join(liveLog, "0.log"), filepath.Join(links, "live_default_app-old.log"))
	os.Symlink(filepath.Join(liveLog, "1.log"), filepath.Join(links, "live_default_app-new.log"))
	os.Symlink(filepath.Join(dir, "nowhere.log"), filepath.Join(links, "x_default_app-dangling.log"))

	g := New(Config{Runtime: rt, Pods: pods{"u1": true}, Clock: clocktesting.NewFakeClock(now), Policy: DefaultPolicy,
		PodLogsDir: podLogs, ContainerLogsDir: links})
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	sort.Strings(rt.removed)
	if got := rt.removed; len(got) != 3 || got[0] != "gone" || got[1] != "old" || got[2] != "s2" {
		t.Fatalf("removed %v, want gone, old and s2", got)
	}
	entries, _ := os.ReadDir(liveLog)
	if len(entries) != 1 || entries[0].Name() != "1.log" {
		t.Fatalf("live pod's logs %v: want only the kept instance's", entries)
	}
	if _, err := os.Stat(filepath.Join(podLogs, "default_deleted_u2")); !os.IsNotExist(err) {
		t.Fatalf("deleted pod's log dir: %v", err)
	}
	left, _ := os.ReadDir(links)
	if len(left) != 1 || left[0].Name() != "live_default_app-new.log" {
		t.Fatalf("links left %v", left)
	}
}
