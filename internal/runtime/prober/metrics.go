package prober

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

// resultLabel is prober_probe_total's result label of r, as upstream.
func resultLabel(r Result) string {
	switch r {
	case Success:
		return metrics.ProbeResultSuccessful
	case Failure:
		return metrics.ProbeResultFailed
	default:
		return metrics.ProbeResultUnknown
	}
}

// recordProbe counts one probe that ran (a prober error is not counted, as
// upstream throws such a result away) and, as upstream, observes its
// duration unless it failed.
func recordProbe(m *metrics.Metrics, k key, pod *v1.Pod, r Result, d time.Duration) {
	m.ProbeTotal.WithLabelValues(k.t.String(), resultLabel(r), k.container, pod.Name, pod.Namespace, string(pod.UID)).Inc()
	if r != Failure {
		m.ProbeDuration.WithLabelValues(k.t.String(), k.container, pod.Name, pod.Namespace).Observe(d.Seconds())
	}
}

// forgetProbe deletes the series of one probe of a pod that is gone.
func forgetProbe(m *metrics.Metrics, k key, pod *v1.Pod) {
	if pod == nil {
		return
	}
	for _, r := range []Result{Success, Failure, Unknown} {
		m.ProbeTotal.DeleteLabelValues(k.t.String(), resultLabel(r), k.container, pod.Name, pod.Namespace, string(pod.UID))
	}
	m.ProbeDuration.DeleteLabelValues(k.t.String(), k.container, pod.Name, pod.Namespace)
}
