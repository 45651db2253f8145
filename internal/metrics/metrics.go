package metrics

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
)

const subsystem = "kubelet"

// Upstream's buckets for pod start and runtime operation durations.
var (
	podStartBuckets  = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	runtimeOpBuckets = prometheus.ExponentialBuckets(.005, 2.5, 14)
)

var (
	// PodStartDuration is from a pod being seen to its containers running.
	PodStartDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pod_start_duration_seconds",
		Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		Buckets: podStartBuckets,
	})
	// PodStartSLIDuration excludes image pull time, as upstream's SLI.
	PodStartSLIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pod_start_sli_duration_seconds",
		Help:    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Buckets: podStartBuckets,
	}, []string{})
	// PLEGRelistInterval is the time between the starts of two relists.
	PLEGRelistInterval = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "pleg_relist_interval_seconds",
		Help:    "Interval in seconds between relisting in PLEG.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	})
	// RunningPods and RunningContainers are set from each relist.
	RunningPods = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "running_pods",
		Help: "Number of pods that have a running pod sandbox",
	})
	RunningContainers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "running_containers",
		Help: "Number of containers currently running",
	}, []string{"container_state"})
	// RuntimeOperationsDuration and RuntimeOperationsErrors cover every CRI call.
	RuntimeOperationsDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "runtime_operations_duration_seconds",
		Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
		Buckets: runtimeOpBuckets,
	}, []string{"operation_type"})
	RuntimeOperationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "runtime_operations_total",
		Help: "Cumulative number of runtime operations by operation type.",
	}, []string{"operation_type"})
	RuntimeOperationsErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "runtime_operations_errors_total",
		Help: "Cumulative number of runtime operation errors by operation type.",
	}, []string{"operation_type"})
)

// NewRegistry returns a registry with the kubelet's metrics, the extra
// collectors given (PLEG, ...), and the Go and process collectors.
func NewRegistry(extra ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(PodStartDuration, PodStartSLIDuration, PLEGRelistInterval, RunningPods, RunningContainers,
		RuntimeOperationsDuration, RuntimeOperationsTotal, RuntimeOperationsErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range extra {
		r.MustRegister(c)
	}
	return r
}

// operationType turns "/runtime.v1.RuntimeService/RunPodSandbox" into
// upstream's label value "run_podsandbox".
func operationType(method string) string {
	name := method[strings.LastIndex(method, "/")+1:]
	if v, ok := opNames[name]; ok {
		return v
	}
	return toSnake(name)
}

// Upstream's names where they differ from plain snake case.
var opNames = map[string]string{
	"RunPodSandbox": "run_podsandbox", "StopPodSandbox": "stop_podsandbox", "RemovePodSandbox": "remove_podsandbox",
	"PodSandboxStatus": "podsandbox_status", "ListPodSandbox": "list_podsandbox", "ImageFsInfo": "imagefs_info",
	"ListPodSandboxStats": "list_podsandbox_stats", "PodSandboxStats": "podsandbox_stats",
}

func toSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// UnaryInterceptor times and counts every CRI call.
func UnaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	op := operationType(method)
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	RuntimeOperationsDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	RuntimeOperationsTotal.WithLabelValues(op).Inc()
	// A series appears with the first error, as upstream's.
	if err != nil {
		RuntimeOperationsErrors.WithLabelValues(op).Inc()
	}
	return err
}
