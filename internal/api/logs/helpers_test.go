package logs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// t0 is the base time of the test logs.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// crilog renders CRI log lines; each entry is "<second offset> <stream> <tag> <content>".
func crilog(entries ...string) string {
	var b strings.Builder
	for _, e := range entries {
		var sec int
		var stream, tag string
		fields := strings.SplitN(e, " ", 4)
		fmt.Sscan(fields[0], &sec)
		stream, tag = fields[1], fields[2]
		content := ""
		if len(fields) == 4 {
			content = fields[3]
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
	}
	return b.String()
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Error(err)
	}
}

func ptr[T any](v T) *T { return &v }

// syncBuffer is a bytes.Buffer safe for a reader goroutine and a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeRuntime implements the two RuntimeServiceClient calls the package
// makes; any other call panics on the nil embedded interface.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient

	mu         sync.Mutex
	containers []*runtimeapi.Container
	statuses   map[string]*runtimeapi.ContainerStatus
	listErr    error
	statusErr  map[string]error
	statusHits int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{statuses: map[string]*runtimeapi.ContainerStatus{}, statusErr: map[string]error{}}
}

// add records an instance of container name of pod uid.
func (f *fakeRuntime) add(uid types.UID, name, id string, attempt uint32, created int64, state runtimeapi.ContainerState, exitCode int32, logPath string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	labels := map[string]string{criconfig.LabelPodUID: string(uid), criconfig.LabelContainerName: name}
	f.containers = append(f.containers, &runtimeapi.Container{
		Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		State: state, CreatedAt: created, Labels: labels,
	})
	f.statuses[id] = &runtimeapi.ContainerStatus{
		Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		State: state, CreatedAt: created, ExitCode: exitCode, LogPath: logPath, Labels: labels,
	}
}

func (f *fakeRuntime) setState(id string, state runtimeapi.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[id].State = state
	for _, c := range f.containers {
		if c.Id == id {
			c.State = state
		}
	}
}

func (f *fakeRuntime) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.statuses, id)
}

func (f *fakeRuntime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	resp := &runtimeapi.ListContainersResponse{}
next:
	for _, c := range f.containers {
		for k, v := range req.GetFilter().GetLabelSelector() {
			if c.Labels[k] != v {
				continue next
			}
		}
		resp.Containers = append(resp.Containers, proto.Clone(c).(*runtimeapi.Container))
	}
	return resp, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusHits++
	if err := f.statusErr[req.ContainerId]; err != nil {
		return nil, err
	}
	st, ok := f.statuses[req.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	return &runtimeapi.ContainerStatusResponse{Status: proto.Clone(st).(*runtimeapi.ContainerStatus)}, nil
}

func (f *fakeRuntime) hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusHits
}

// fakePods is a pod manager keyed by "namespace/name".
type fakePods map[string]*v1.Pod

func (p fakePods) GetByFullName(namespace, name string) (*v1.Pod, bool) {
	pod, ok := p[namespace+"/"+name]
	return pod, ok
}

// fakeStatuses is a status manager.
type fakeStatuses map[types.UID]v1.PodStatus

func (s fakeStatuses) Get(uid types.UID) (v1.PodStatus, bool) {
	st, ok := s[uid]
	return st, ok
}

func osSymlink(target, link string) error { return os.Symlink(target, link) }
