package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
)

func TestOperationType(t *testing.T) {
	cases := map[string]string{
		"/runtime.v1.RuntimeService/RunPodSandbox":   "run_podsandbox",
		"/runtime.v1.RuntimeService/CreateContainer": "create_container",
		"/runtime.v1.RuntimeService/ListContainers":  "list_containers",
		"/runtime.v1.ImageService/PullImage":         "pull_image",
		"/runtime.v1.ImageService/ImageFsInfo":       "imagefs_info",
	}
	for in, want := range cases {
		if got := operationType(in); got != want {
			t.Errorf("operationType(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInterceptorCountsErrors(t *testing.T) {
	fail := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		return errors.New("boom")
	}
	before := testutil.ToFloat64(RuntimeOperationsErrors.WithLabelValues("stop_container"))
	if err := UnaryInterceptor(context.Background(), "/runtime.v1.RuntimeService/StopContainer", nil, nil, nil, fail); err == nil {
		t.Fatal("error swallowed")
	}
	if got := testutil.ToFloat64(RuntimeOperationsErrors.WithLabelValues("stop_container")); got != before+1 {
		t.Fatalf("errors = %v, want %v", got, before+1)
	}
}

func TestRegistryExposesUpstreamNames(t *testing.T) {
	r := NewRegistry()
	RunningPods.Set(3)
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"kubelet_running_pods", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(all, want) {
			t.Errorf("registry lacks %s (has %s)", want, all)
		}
	}
}
