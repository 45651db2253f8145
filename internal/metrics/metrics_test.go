package metrics

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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

func TestInterceptorCountsCallsAndErrors(t *testing.T) {
	m := New()
	ok := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		return nil
	}
	fail := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		return errors.New("boom")
	}
	if err := m.UnaryInterceptor(context.Background(), "/runtime.v1.RuntimeService/StopContainer", nil, nil, nil, ok); err != nil {
		t.Fatal(err)
	}
	if err := m.UnaryInterceptor(context.Background(), "/runtime.v1.RuntimeService/StopContainer", nil, nil, nil, fail); err == nil {
		t.Fatal("error swallowed")
	}
	if got := testutil.ToFloat64(m.RuntimeOperationsTotal.WithLabelValues("stop_container")); got != 2 {
		t.Errorf("operations = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.RuntimeOperationsErrors.WithLabelValues("stop_container")); got != 1 {
		t.Errorf("errors = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.RuntimeOperationsDuration); n != 1 {
		t.Errorf("duration series = %d, want 1", n)
	}
}

// Two sets share nothing: what one component records is not seen by
// another kubelet's (or test's) set.
func TestSetsAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.RunningPods.Set(3)
	if got := testutil.ToFloat64(b.RunningPods); got != 0 {
		t.Fatalf("second set sees %v running pods", got)
	}
}

func TestRegistryExposesUpstreamNames(t *testing.T) {
	m := New()
	m.RunningPods.Set(3)
	m.Evictions.WithLabelValues("memory.available").Inc()
	m.ImageGarbageCollected.WithLabelValues("age").Inc()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	all := " " + strings.Join(names, " ") + " "
	for _, want := range []string{"kubelet_running_pods", "kubelet_evictions",
		"kubelet_image_garbage_collected_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(all, " "+want+" ") {
			t.Errorf("registry lacks %s (has %s)", want, all)
		}
	}
	if strings.Contains(all, "prober_") {
		t.Errorf("/metrics carries the prober's families (%s); upstream serves them on /metrics/probes only", all)
	}
}

// /metrics/probes holds the prober's two families and
// process_start_time_seconds, as upstream's server registers them.
func TestProbeRegistry(t *testing.T) {
	m := New()
	m.ProbeTotal.WithLabelValues("Readiness", ProbeResultSuccessful, "c", "p", "ns", "uid").Inc()
	m.ProbeDuration.WithLabelValues("Readiness", "c", "p", "ns").Observe(0.01)
	r := m.ProbeRegistry()
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
		if mf.GetName() == "process_start_time_seconds" && mf.GetMetric()[0].GetGauge().GetValue() <= 0 {
			t.Errorf("process_start_time_seconds = %v", mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "prober_probe_duration_seconds prober_probe_total process_start_time_seconds" {
		t.Fatalf("/metrics/probes families = %s", got)
	}
	want := `
# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="successful"} 1
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "prober_probe_total"); err != nil {
		t.Fatal(err)
	}
}

func TestManagedEphemeralContainers(t *testing.T) {
	n := 2
	r := prometheus.NewRegistry()
	r.MustRegister(ManagedEphemeralContainers(func() int { return n }))
	read := func() float64 {
		mfs, err := r.Gather()
		if err != nil || len(mfs) != 1 || mfs[0].GetName() != "kubelet_managed_ephemeral_containers" {
			t.Fatalf("gather: %v %v", mfs, err)
		}
		return mfs[0].GetMetric()[0].GetGauge().GetValue()
	}
	if v := read(); v != 2 {
		t.Fatalf("value = %v, want 2", v)
	}
	n = 3
	if v := read(); v != 3 {
		t.Fatalf("value = %v after a debug container was added, want 3", v)
	}
}
