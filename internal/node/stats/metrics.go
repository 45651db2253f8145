package stats

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The /metrics/resource descriptors, with upstream's names, labels and
// help text as its metrics framework renders it (stability prefix, and the
// deprecation note of scrape_error).
var (
	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}

	nodeCPUUsageDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"[STABLE] Current working set of the node in bytes", nil, nil)
	nodeSwapUsageDesc = prometheus.NewDesc("node_swap_usage_bytes",
		"[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil)
	containerCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the container in core-seconds", containerLabels, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"[STABLE] Current working set of the container in bytes", containerLabels, nil)
	containerSwapUsageDesc = prometheus.NewDesc("container_swap_usage_bytes",
		"[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems", containerLabels, nil)
	containerSwapLimitDesc = prometheus.NewDesc("container_swap_limit_bytes",
		"[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems", containerLabels, nil)
	podCPUUsageDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", podLabels, nil)
	podMemoryUsageDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"[STABLE] Current working set of the pod in bytes", podLabels, nil)
	podSwapUsageDesc = prometheus.NewDesc("pod_swap_usage_bytes",
		"[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems", podLabels, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	containerStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"[STABLE] Start time of the container since unix epoch in seconds", containerLabels, nil)
)

// scrapeTimeout bounds the CRI calls of one /metrics/resource scrape.
const scrapeTimeout = time.Minute

// ResourceMetricsCollector returns the collector behind /metrics/resource.
// Each scrape builds a CPU-and-memory Summary, so only live pods and
// containers are exported.
func (p *Provider) ResourceMetricsCollector() prometheus.Collector {
	return &resourceCollector{
		summary:    func(ctx context.Context) (*statsapi.Summary, error) { return p.Summary(ctx, true) },
		showHidden: p.cfg.ShowHiddenMetrics,
	}
}

type resourceCollector struct {
	summary    func(context.Context) (*statsapi.Summary, error)
	showHidden bool
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		nodeCPUUsageDesc, nodeMemoryUsageDesc, nodeSwapUsageDesc, containerStartTimeDesc,
		containerCPUUsageDesc, containerMemoryUsageDesc, containerSwapUsageDesc, containerSwapLimitDesc,
		podCPUUsageDesc, podMemoryUsageDesc, podSwapUsageDesc, resourceScrapeErrorDesc,
	} {
		ch <- d
	}
	if c.showHidden {
		ch <- scrapeErrorDesc
	}
}

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	errCount := 0.0
	defer func() {
		if c.showHidden {
			ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, errCount)
		}
		ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, errCount)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s, err := c.summary(ctx)
	if err != nil {
		errCount = 1
		klog.ErrorS(err, "Error getting summary for resourceMetric prometheus endpoint")
		return
	}
	for _, m := range resourceMetrics(s) {
		ch <- m
	}
}

// resourceMetrics turns a CPU-and-memory Summary into the resource
// metrics, each stamped with the time of its reading.
func resourceMetrics(s *statsapi.Summary) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(t time.Time, d *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string) {
		m := prometheus.MustNewConstMetric(d, vt, v, labels...)
		if !t.IsZero() {
			m = prometheus.NewMetricWithTimestamp(t, m)
		}
		out = append(out, m)
	}
	n := s.Node
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		add(n.CPU.Time.Time, nodeCPUUsageDesc, prometheus.CounterValue, seconds(*n.CPU.UsageCoreNanoSeconds))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		add(n.Memory.Time.Time, nodeMemoryUsageDesc, prometheus.GaugeValue, float64(*n.Memory.WorkingSetBytes))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		add(n.Swap.Time.Time, nodeSwapUsageDesc, prometheus.GaugeValue, float64(*n.Swap.SwapUsageBytes))
	}
	for _, pod := range s.Pods {
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		for _, c := range pod.Containers {
			if c.StartTime.Unix() > 0 {
				add(time.Time{}, containerStartTimeDesc, prometheus.GaugeValue, float64(c.StartTime.UnixNano())/float64(time.Second), c.Name, name, ns)
			}
			if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
				add(c.CPU.Time.Time, containerCPUUsageDesc, prometheus.CounterValue, seconds(*c.CPU.UsageCoreNanoSeconds), c.Name, name, ns)
			}
			if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				add(c.Memory.Time.Time, containerMemoryUsageDesc, prometheus.GaugeValue, float64(*c.Memory.WorkingSetBytes), c.Name, name, ns)
			}
			if c.Swap != nil && c.Swap.SwapUsageBytes != nil {
				add(c.Swap.Time.Time, containerSwapUsageDesc, prometheus.GaugeValue, float64(*c.Swap.SwapUsageBytes), c.Name, name, ns)
			}
			if c.Swap != nil && c.Swap.SwapAvailableBytes != nil {
				limit := float64(*c.Swap.SwapAvailableBytes) + float64(deref(c.Swap.SwapUsageBytes))
				add(c.Swap.Time.Time, containerSwapLimitDesc, prometheus.GaugeValue, limit, c.Name, name, ns)
			}
		}
		if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
			add(pod.CPU.Time.Time, podCPUUsageDesc, prometheus.CounterValue, seconds(*pod.CPU.UsageCoreNanoSeconds), name, ns)
		}
		if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
			add(pod.Memory.Time.Time, podMemoryUsageDesc, prometheus.GaugeValue, float64(*pod.Memory.WorkingSetBytes), name, ns)
		}
		if pod.Swap != nil && pod.Swap.SwapUsageBytes != nil {
			add(pod.Swap.Time.Time, podSwapUsageDesc, prometheus.GaugeValue, float64(*pod.Swap.SwapUsageBytes), name, ns)
		}
	}
	return out
}

func seconds(nanos uint64) float64 { return float64(nanos) / float64(time.Second) }
