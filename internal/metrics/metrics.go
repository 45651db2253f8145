package metrics

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/procfs"
	"google.golang.org/grpc"
)

const subsystem = "kubelet"

// Upstream's buckets for pod start and runtime operation durations.
var (
	podStartBuckets  = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	runtimeOpBuckets = prometheus.ExponentialBuckets(.005, 2.5, 14)
	plegBuckets      = prometheus.ExponentialBuckets(0.005, 2, 12)
)

// Label values of prober_probe_total's result, as upstream's prober.
const (
	ProbeResultSuccessful = "successful"
	ProbeResultFailed     = "failed"
	ProbeResultUnknown    = "unknown"
)

// Metrics are the kubelet's collectors. The kubelet builds one set with New
// and hands it to each component through its Config; the HTTP API serves it
// with Registry (/metrics) and ProbeRegistry (/metrics/probes).
type Metrics struct {
	// PodStartDuration is from a pod being seen to its containers running.
	PodStartDuration prometheus.Histogram
	// PodStartSLIDuration is measured from the pod's creation, as upstream's SLI.
	PodStartSLIDuration *prometheus.HistogramVec
	// PodWorkerDuration times each pod worker step by operation_type:
	// create (a worker's first sync), update (after a new spec), sync,
	// kill (stopping the pod) and terminated (cleaning up after it).
	PodWorkerDuration *prometheus.HistogramVec
	// PLEGRelistDuration and PLEGRelistInterval time the PLEG's relists.
	PLEGRelistDuration prometheus.Histogram
	PLEGRelistInterval prometheus.Histogram
	// DesiredPods, ActivePods, WorkingPods and RestartedPods are set by
	// each housekeeping once every source has been seen, as upstream's
	// HandlePodCleanups: pods the sources ask for, those admitted and
	// holding node resources (static: "true" or ""), pod workers by
	// lifecycle, config and static, and pods started again because their
	// UID came back while its old worker was still terminating.
	DesiredPods   *prometheus.GaugeVec
	ActivePods    *prometheus.GaugeVec
	WorkingPods   *prometheus.GaugeVec
	RestartedPods *prometheus.CounterVec
	// RunningPods and RunningContainers are set from each relist.
	RunningPods       prometheus.Gauge
	RunningContainers *prometheus.GaugeVec
	// RuntimeOperations* cover every CRI call (UnaryInterceptor).
	RuntimeOperationsDuration *prometheus.HistogramVec
	RuntimeOperationsTotal    *prometheus.CounterVec
	RuntimeOperationsErrors   *prometheus.CounterVec
	// Evictions and EvictionStatsAge are the eviction manager's, by signal.
	Evictions        *prometheus.CounterVec
	EvictionStatsAge *prometheus.HistogramVec
	// ImageGarbageCollected counts images the image GC removed, by reason.
	ImageGarbageCollected *prometheus.CounterVec
	// GracefulShutdownStartTime and GracefulShutdownEndTime are the last
	// graceful node shutdown's (internal/node/shutdown).
	GracefulShutdownStartTime prometheus.Gauge
	GracefulShutdownEndTime   prometheus.Gauge
	// In-place pod resize (pods/resize), as upstream's.
	ContainerRequestedResizes     *prometheus.CounterVec
	PodResizeDurationMilliseconds *prometheus.HistogramVec
	PodPendingResizes             *prometheus.GaugeVec
	PodInfeasibleResizes          *prometheus.CounterVec
	PodInProgressResizes          prometheus.Gauge
	PodDeferredAcceptedResizes    *prometheus.CounterVec
	// User-namespaced pods (hostUsers: false) started, and those that
	// failed to start.
	StartedUserNamespacedPods       prometheus.Counter
	StartedUserNamespacedPodsErrors prometheus.Counter

	// ProbeTotal and ProbeDuration are the prober's, served on
	// /metrics/probes (labels: see ProbeLabels).
	ProbeTotal    *prometheus.CounterVec
	ProbeDuration *prometheus.HistogramVec
	// processStart is process_start_time_seconds for /metrics/probes.
	processStart prometheus.Collector
}

// New returns a fresh set of collectors, registered nowhere yet.
func New() *Metrics {
	return &Metrics{
		PodStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			Buckets: podStartBuckets,
		}),
		PodStartSLIDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_start_sli_duration_seconds",
			Help:    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
			Buckets: podStartBuckets,
		}, []string{}),
		PodWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		PLEGRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: plegBuckets,
		}),
		PLEGRelistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pleg_relist_interval_seconds",
			Help:    "Interval in seconds between relisting in PLEG.",
			Buckets: plegBuckets,
		}),
		DesiredPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "desired_pods",
			Help: "[ALPHA] The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.",
		}, []string{"static"}),
		ActivePods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "active_pods",
			Help: "[ALPHA] The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.",
		}, []string{"static"}),
		WorkingPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "working_pods",
			Help: "[ALPHA] Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible.",
		}, []string{"lifecycle", "config", "static"}),
		RestartedPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "restarted_pods_total",
			Help: "[ALPHA] Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)",
		}, []string{"static"}),
		RunningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "running_pods",
			Help: "Number of pods that have a running pod sandbox",
		}),
		RunningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "running_containers",
			Help: "Number of containers currently running",
		}, []string{"container_state"}),
		RuntimeOperationsDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: runtimeOpBuckets,
		}, []string{"operation_type"}),
		RuntimeOperationsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		RuntimeOperationsErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "evictions",
			Help: "Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"}),
		EvictionStatsAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "eviction_stats_age_seconds",
			Help:    "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
			Buckets: prometheus.DefBuckets,
		}, []string{"eviction_signal"}),
		ImageGarbageCollected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "image_garbage_collected_total",
			Help: "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
		}, []string{"reason"}),
		GracefulShutdownStartTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "graceful_shutdown_start_time_seconds",
			Help: "[ALPHA] Last graceful shutdown start time since unix epoch in seconds",
		}),
		GracefulShutdownEndTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "graceful_shutdown_end_time_seconds",
			Help: "[ALPHA] Last graceful shutdown end time since unix epoch in seconds",
		}),
		ContainerRequestedResizes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "container_requested_resizes_total",
			Help: "Number of requested resizes, counted at the container level. Different resources on the same container are counted separately. The 'requirement' label refers to 'memory' or 'limits'; the 'operation' label can be one of 'add', 'remove', 'increase' or 'decrease'.",
		}, []string{"resource", "requirement", "operation"}),
		PodResizeDurationMilliseconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_resize_duration_milliseconds",
			Help:    "Duration in milliseconds to actuate a pod resize",
			Buckets: []float64{10, 50, 100, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000, 120000, 300000, 600000},
		}, []string{"success"}),
		PodPendingResizes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "pod_pending_resizes",
			Help: "Number of pending resizes for pods.",
		}, []string{"reason"}),
		PodInfeasibleResizes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "pod_infeasible_resizes_total",
			Help: "Number of infeasible resizes for pods.",
		}, []string{"reason_detail"}),
		PodInProgressResizes: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "pod_in_progress_resizes",
			Help: "Number of in-progress resizes for pods.",
		}),
		PodDeferredAcceptedResizes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "pod_deferred_accepted_resizes_total",
			Help: "Cumulative number of resizes that were accepted after being deferred.",
		}, []string{"retry_trigger"}),
		StartedUserNamespacedPods: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "started_user_namespaced_pods_total",
			Help: "Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.",
		}),
		StartedUserNamespacedPodsErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "started_user_namespaced_pods_errors_total",
			Help: "Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.",
		}),
		// Upstream's help carries the stability level component-base adds;
		// the histogram keeps component-base's default (Prometheus') buckets.
		ProbeTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober", Name: "probe_total",
			Help: "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		ProbeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober", Name: "probe_duration_seconds",
			Help:    "[ALPHA] Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
		processStart: processStartTime(),
	}
}

// Registry returns a registry for /metrics: the kubelet_* families, the
// extra collectors given, and the Go and process collectors.
func (m *Metrics) Registry(extra ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(m.PodStartDuration, m.PodStartSLIDuration, m.PodWorkerDuration, m.PLEGRelistDuration, m.PLEGRelistInterval,
		m.DesiredPods, m.ActivePods, m.WorkingPods, m.RestartedPods,
		m.RunningPods, m.RunningContainers, m.RuntimeOperationsDuration, m.RuntimeOperationsTotal,
		m.RuntimeOperationsErrors, m.Evictions, m.EvictionStatsAge, m.ImageGarbageCollected,
		m.GracefulShutdownStartTime, m.GracefulShutdownEndTime,
		m.ContainerRequestedResizes, m.PodResizeDurationMilliseconds, m.PodPendingResizes, m.PodInfeasibleResizes,
		m.PodInProgressResizes, m.PodDeferredAcceptedResizes, m.StartedUserNamespacedPods, m.StartedUserNamespacedPodsErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range extra {
		r.MustRegister(c)
	}
	return r
}

// ProbeRegistry returns a registry for /metrics/probes, as upstream's
// server builds it: the prober's families and process_start_time_seconds.
func (m *Metrics) ProbeRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(m.ProbeTotal, m.ProbeDuration, m.processStart)
	return r
}

// processStartTime is upstream's process_start_time_seconds gauge (the
// one component-base registers beside the prober's metrics).
func processStartTime() prometheus.Collector {
	start := float64(time.Now().Unix())
	if p, err := procfs.NewProc(os.Getpid()); err == nil {
		if st, err := p.Stat(); err == nil {
			if s, err := st.StartTime(); err == nil {
				start = s
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "process_start_time_seconds",
		Help: "[ALPHA] Start time of the process since unix epoch in seconds.",
	}, func() float64 { return start })
}

// ManagedEphemeralContainers is upstream's kubelet_managed_ephemeral_containers
// gauge, read at scrape time: count returns the number of ephemeral
// containers in the specs of the pods the kubelet manages.
func ManagedEphemeralContainers(count func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "managed_ephemeral_containers",
		Help: "Current number of ephemeral containers in pods managed by this kubelet.",
	}, func() float64 { return float64(count()) })
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
func (m *Metrics) UnaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	op := operationType(method)
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	m.RuntimeOperationsDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	m.RuntimeOperationsTotal.WithLabelValues(op).Inc()
	// A series appears with the first error, as upstream's.
	if err != nil {
		m.RuntimeOperationsErrors.WithLabelValues(op).Inc()
	}
	return err
}
