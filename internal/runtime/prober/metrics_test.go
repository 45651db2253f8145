package prober

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
)

// A probe that ran is counted by result with upstream's labels; its
// duration is observed unless it failed; the series go with the pod.
func TestProbeMetrics(t *testing.T) {
	h := newHarness(t, map[string][]int32{"ready": {0, 1}, "live": {0}})
	pod := testPod(v1.Container{Name: "c",
		ReadinessProbe: execProbeSpec("ready", 0, 1, 1, 1),
		LivenessProbe:  execProbeSpec("live", 0, 1, 1, 3)})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	waitFor(t, "first probes", func() bool {
		return h.rt.count("ready") == 1 && h.rt.count("live") == 1 && h.clk.Waiters() == 2
	})
	h.step(t, 2, time.Second)
	waitFor(t, "second probes", func() bool {
		return h.rt.count("ready") == 2 && h.rt.count("live") == 2 && h.clk.Waiters() == 2
	})

	want := `
# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid-1",probe_type="Liveness",result="successful"} 2
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid-1",probe_type="Readiness",result="failed"} 1
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid-1",probe_type="Readiness",result="successful"} 1
`
	if err := testutil.CollectAndCompare(h.metrics.ProbeTotal, strings.NewReader(want), "prober_probe_total"); err != nil {
		t.Fatal(err)
	}
	// Durations: two successful liveness probes and one successful readiness
	// probe; the failed readiness probe is not observed, as upstream.
	counts := histogramCounts(t, h.metrics.ProbeDuration)
	if counts["Liveness"] != 2 || counts["Readiness"] != 1 || len(counts) != 2 {
		t.Fatalf("probe duration sample counts = %v, want Liveness 2, Readiness 1", counts)
	}

	h.m.RemovePod(pod.UID)
	if n := testutil.CollectAndCount(h.metrics.ProbeTotal); n != 0 {
		t.Errorf("%d prober_probe_total series left after the pod was removed", n)
	}
	if n := testutil.CollectAndCount(h.metrics.ProbeDuration); n != 0 {
		t.Errorf("%d prober_probe_duration_seconds series left after the pod was removed", n)
	}
}

// A probe that could not run (here: no runtime to exec in) is an error,
// not a result: nothing is counted.
func TestProbeErrorNotCounted(t *testing.T) {
	h := newHarness(t, map[string][]int32{})
	h.m = New(Config{Clock: h.clk, Recorder: h.rec, Metrics: h.metrics})
	t.Cleanup(h.m.Stop)
	pod := testPod(v1.Container{Name: "c", LivenessProbe: execProbeSpec("live", 0, 1, 1, 3)})
	h.m.AddPod(pod)
	h.m.ContainerStarted(pod, "c", "cid", h.clk.Now(), Prior{})
	waitFor(t, "an errored probe", func() bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		return len(h.rec.reasons) > 0
	})
	if n := testutil.CollectAndCount(h.metrics.ProbeTotal); n != 0 {
		t.Fatalf("%d series counted for a probe that errored", n)
	}
}

// histogramCounts returns the sample count per probe_type, checking that
// every series has upstream's (Prometheus' default) buckets.
func histogramCounts(t *testing.T, c prometheus.Collector) map[string]uint64 {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(c)
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			hist := m.GetHistogram()
			var bounds []float64
			for _, b := range hist.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			if len(bounds) != len(prometheus.DefBuckets) {
				t.Errorf("buckets %v, want %v", bounds, prometheus.DefBuckets)
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "probe_type" {
					out[l.GetValue()] += hist.GetSampleCount()
				}
			}
		}
	}
	return out
}
