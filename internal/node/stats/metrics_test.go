package stats

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func metricsSummary() *statsapi.Summary {
	t := metav1.NewTime(time.Unix(1624396278, 302e6))
	start := metav1.NewTime(time.Unix(1624396200, 5e8))
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			CPU:    &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(10e9)},
			Memory: &statsapi.MemoryStats{Time: t, WorkingSetBytes: u64(1000)},
			Swap:   &statsapi.SwapStats{Time: t, SwapUsageBytes: u64(0), SwapAvailableBytes: u64(0)},
		},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "pod_a", Namespace: "ns_a", UID: "u"},
			CPU:    &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(2e9)},
			Memory: &statsapi.MemoryStats{Time: t, WorkingSetBytes: u64(300)},
			Swap:   &statsapi.SwapStats{Time: t, SwapUsageBytes: u64(0), SwapAvailableBytes: u64(0)},
			Containers: []statsapi.ContainerStats{
				{
					Name: "c1", StartTime: start,
					CPU:    &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(15e8)},
					Memory: &statsapi.MemoryStats{Time: t, WorkingSetBytes: u64(200)},
					Swap:   &statsapi.SwapStats{Time: t, SwapUsageBytes: u64(5), SwapAvailableBytes: u64(10)},
				},
				{
					// Never started: no start time, and no memory reading.
					Name: "c2",
					CPU:  &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(5e8)},
				},
			},
		}},
	}
}

const allMetrics = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="c1",namespace="ns_a",pod="pod_a"} 1.5 1624396278302
container_cpu_usage_seconds_total{container="c2",namespace="ns_a",pod="pod_a"} 0.5 1624396278302
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="c1",namespace="ns_a",pod="pod_a"} 200 1624396278302
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="c1",namespace="ns_a",pod="pod_a"} 1.6243962005e+09
# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems
# TYPE container_swap_limit_bytes gauge
container_swap_limit_bytes{container="c1",namespace="ns_a",pod="pod_a"} 15 1624396278302
# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems
# TYPE container_swap_usage_bytes gauge
container_swap_usage_bytes{container="c1",namespace="ns_a",pod="pod_a"} 5 1624396278302
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 10 1624396278302
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1000 1624396278302
# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems
# TYPE node_swap_usage_bytes gauge
node_swap_usage_bytes 0 1624396278302
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="ns_a",pod="pod_a"} 2 1624396278302
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="ns_a",pod="pod_a"} 300 1624396278302
# HELP pod_swap_usage_bytes [ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems
# TYPE pod_swap_usage_bytes gauge
pod_swap_usage_bytes{namespace="ns_a",pod="pod_a"} 0 1624396278302
`

const scrapeOK = `# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`

const scrapeFailed = `# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 1
`

const hiddenScrapeFailed = `# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 1
`

func TestResourceMetricsCollector(t *testing.T) {
	tests := []struct {
		name       string
		summary    *statsapi.Summary
		err        error
		showHidden bool
		want       string
		names      []string
	}{
		{name: "every metric with upstream names, labels and help", summary: metricsSummary(), want: allMetrics + scrapeOK},
		{name: "error: only the scrape error", err: errors.New("cri down"), want: scrapeFailed, names: []string{"resource_scrape_error", "scrape_error", "node_cpu_usage_seconds_total"}},
		{name: "hidden scrape_error shown on request", err: errors.New("cri down"), showHidden: true, want: scrapeFailed + hiddenScrapeFailed, names: []string{"resource_scrape_error", "scrape_error"}},
		{name: "hidden scrape_error absent by default", summary: metricsSummary(), want: "", names: []string{"scrape_error"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &resourceCollector{
				summary:    func(context.Context) (*statsapi.Summary, error) { return tc.summary, tc.err },
				showHidden: tc.showHidden,
			}
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestResourceMetricsCollectorRegisters(t *testing.T) {
	tests := []struct {
		name       string
		showHidden bool
	}{
		{name: "default"},
		{name: "with hidden metrics", showHidden: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.p.cfg.ShowHiddenMetrics = tc.showHidden
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(f.p.ResourceMetricsCollector()); err != nil {
				t.Fatal(err)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, mf := range mfs {
				got[mf.GetName()] = true
			}
			for _, n := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "pod_cpu_usage_seconds_total", "pod_memory_working_set_bytes", "container_start_time_seconds", "resource_scrape_error"} {
				if !got[n] {
					t.Errorf("%s missing from %v", n, got)
				}
			}
			if got["scrape_error"] != tc.showHidden {
				t.Errorf("scrape_error present = %v, want %v", got["scrape_error"], tc.showHidden)
			}
		})
	}
}
