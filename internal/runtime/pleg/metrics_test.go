package pleg

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// Each relist sets the running pods and containers gauges and observes its
// duration; from the second one on, the interval between relists too.
func TestRelistMetrics(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	m := metrics.New()
	l := &fakeLister{pods: []*kuberuntime.RunningPod{
		{UID: "a", Sandboxes: []kuberuntime.SandboxStatus{{ID: "s1", Ready: true}}, Containers: []*kuberuntime.ContainerStatus{
			{ID: "c1", State: kuberuntime.StateRunning}, {ID: "c2", State: kuberuntime.StateExited}}},
		{UID: "b", Sandboxes: []kuberuntime.SandboxStatus{{ID: "s2", Ready: false}}, Containers: []*kuberuntime.ContainerStatus{
			{ID: "c3", State: kuberuntime.StateExited}}},
	}}
	p := New(Config{Lister: l, Clock: clk, RelistPeriod: time.Second, RelistThreshold: time.Minute, Metrics: m})
	p.Relist(context.Background())
	if got := testutil.ToFloat64(m.RunningPods); got != 1 {
		t.Errorf("kubelet_running_pods = %v, want 1 (one ready sandbox)", got)
	}
	want := `
# HELP kubelet_running_containers Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 2
kubelet_running_containers{container_state="running"} 1
kubelet_running_containers{container_state="unknown"} 0
`
	if err := testutil.CollectAndCompare(m.RunningContainers, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n := sampleCount(t, m, "kubelet_pleg_relist_interval_seconds"); n != 0 {
		t.Errorf("interval observed %d times after one relist", n)
	}
	clk.Step(time.Second)
	p.Relist(context.Background())
	if n := sampleCount(t, m, "kubelet_pleg_relist_duration_seconds"); n != 2 {
		t.Errorf("relist duration observed %d times, want 2", n)
	}
	if n := sampleCount(t, m, "kubelet_pleg_relist_interval_seconds"); n != 1 {
		t.Errorf("relist interval observed %d times, want 1", n)
	}
}

func sampleCount(t *testing.T, m *metrics.Metrics, name string) uint64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
