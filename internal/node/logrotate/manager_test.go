package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRuntime is one running container whose log lives in a temp dir;
// ReopenContainerLog creates the file again, as the runtime does.
type fakeRuntime struct {
	path      string
	reopenErr error
	reopens   int
}

func (f *fakeRuntime) ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}}, nil
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: in.ContainerId, LogPath: f.path}}, nil
}

func (f *fakeRuntime) ReopenContainerLog(ctx context.Context, in *runtimeapi.ReopenContainerLogRequest, _ ...grpc.CallOption) (*runtimeapi.ReopenContainerLogResponse, error) {
	f.reopens++
	if f.reopenErr != nil {
		return nil, f.reopenErr
	}
	return &runtimeapi.ReopenContainerLogResponse{}, os.WriteFile(f.path, nil, 0o640)
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestRotateKeepsMaxFilesAndCompresses(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{path: filepath.Join(dir, "0.log")}
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	m, err := New(Config{Runtime: rt, Clock: clk, Policy: Policy{MaxSize: 10, MaxFiles: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, content := range []string{"first log line\n", "second log line\n", "third log line\n", "fourth log line\n"} {
		if err := os.WriteFile(rt.path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := m.RotateAll(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Step(time.Second)
		if n := len(files(t, dir)); n > 3 {
			t.Fatalf("after rotation %d: %d files %v, want at most 3", i, n, files(t, dir))
		}
	}
	got := files(t, dir)
	want := []string{"0.log", "0.log.20240102-030407.gz", "0.log.20240102-030408"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("files %v, want %v", got, want)
	}
	f, err := os.Open(filepath.Join(dir, want[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(zr)
	if string(data) != "third log line\n" {
		t.Fatalf("compressed content %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, want[2])); string(data) != "fourth log line\n" {
		t.Fatalf("newest rotated content %q", data)
	}
}

func TestSmallLogIsNotRotated(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{path: filepath.Join(dir, "0.log")}
	os.WriteFile(rt.path, []byte("short\n"), 0o640)
	m, _ := New(Config{Runtime: rt, Clock: clocktesting.NewFakeClock(time.Now()), Policy: Policy{MaxSize: 1024, MaxFiles: 5}})
	if err := m.RotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 1 || rt.reopens != 0 {
		t.Fatalf("files %v, reopens %d", got, rt.reopens)
	}
}

func TestFailedReopenRestoresTheLog(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{path: filepath.Join(dir, "0.log"), reopenErr: errors.New("boom")}
	os.WriteFile(rt.path, []byte("0123456789abcdef\n"), 0o640)
	m, _ := New(Config{Runtime: rt, Clock: clocktesting.NewFakeClock(time.Now()), Policy: Policy{MaxSize: 10, MaxFiles: 5}})
	if err := m.RotateIfDue(context.Background(), "c1"); err == nil {
		t.Fatal("want the reopen error")
	}
	if got := files(t, dir); len(got) != 1 || got[0] != "0.log" {
		t.Fatalf("files %v, want the log renamed back", got)
	}
	// A missing current log is recreated through the runtime.
	rt.reopenErr = nil
	os.Remove(rt.path)
	if err := m.RotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rt.path); err != nil {
		t.Fatalf("log not reopened: %v", err)
	}
}

func TestClean(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{path: filepath.Join(dir, "0.log")}
	for _, f := range []string{"0.log", "0.log.20240101-000001.gz", "0.log.20240101-000002", "1.log"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o640)
	}
	m, _ := New(Config{Runtime: rt, Clock: clocktesting.NewFakeClock(time.Now()), Policy: Policy{MaxSize: 10, MaxFiles: 5}})
	if err := m.Clean(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); strings.Join(got, ",") != "1.log" {
		t.Fatalf("files %v, want only the other container's log", got)
	}
}

func TestNewRejectsTooFewFiles(t *testing.T) {
	if _, err := New(Config{Runtime: &fakeRuntime{}, Clock: clocktesting.NewFakeClock(time.Now()), Policy: Policy{MaxSize: 10, MaxFiles: 1}}); err == nil {
		t.Fatal("want an error for MaxFiles 1")
	}
}
