package credentialprovider

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are upstream's credential provider families; they exist only
// when plugins are configured, as upstream registers them.
type Metrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	config   *prometheus.GaugeVec
}

func newMetrics(configHash string) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "credential_provider_plugin_duration",
			Help:    "[ALPHA] Duration of execution in seconds for credential provider plugin",
			Buckets: prometheus.DefBuckets,
		}, []string{"plugin_name"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "credential_provider_plugin_errors_total",
			Help: "[ALPHA] Number of errors from credential provider plugin",
		}, []string{"plugin_name"}),
		config: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "credential_provider_config_info",
			Help: "[ALPHA] Information about the last applied credential provider configuration with hash as label",
		}, []string{"hash"}),
	}
	m.config.WithLabelValues(configHash).Set(1)
	return m
}

// observe records one plugin run.
func (m *Metrics) observe(plugin string, took time.Duration, failed bool) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(plugin).Observe(took.Seconds())
	if failed {
		m.errors.WithLabelValues(plugin).Inc()
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.errors, m.config}
}
