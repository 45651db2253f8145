package podsync

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

// The pod start durations are observed once per pod, when it first runs:
// from the kubelet seeing it (config.seen) and from its creation (SLI).
func TestPodStartMetrics(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	clk := testingclock.NewFakeClock(now)
	m := metrics.New()
	s := New(Config{Status: statusmanager.NewManager(nil), Clock: clk, Metrics: m})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "p", Namespace: "ns",
		CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Second)),
		Annotations:       map[string]string{"kubernetes.io/config.seen": now.Add(-4 * time.Second).Format(time.RFC3339Nano)}}}

	s.observeStart(pod, v1.PodStatus{Phase: v1.PodPending})
	s.observeStart(pod, v1.PodStatus{Phase: v1.PodRunning})
	s.observeStart(pod, v1.PodStatus{Phase: v1.PodRunning})

	for name, wantSum := range map[string]float64{"kubelet_pod_start_duration_seconds": 4, "kubelet_pod_start_sli_duration_seconds": 10} {
		h := histogram(t, m.Registry(), name)
		if h.GetSampleCount() != 1 || h.GetSampleSum() != wantSum {
			t.Errorf("%s: %d samples summing %v, want 1 of %v", name, h.GetSampleCount(), h.GetSampleSum(), wantSum)
		}
	}
}

func histogram(t *testing.T, r *prometheus.Registry, name string) interface {
	GetSampleCount() uint64
	GetSampleSum() float64
} {
	t.Helper()
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no single series of %s", name)
	return nil
}
