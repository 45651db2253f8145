package certificate

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a manager's Prometheus metrics, named as upstream's.
type Metrics struct {
	renewErrors prometheus.Counter
	rotationAge prometheus.Histogram // server certificates only, as upstream
	ttlName     string
	ttlHelp     string
}

// NewClientMetrics are the client certificate's:
// kubelet_certificate_manager_client_expiration_renew_errors and
// kubelet_certificate_manager_client_ttl_seconds.
func NewClientMetrics() *Metrics {
	return &Metrics{
		renewErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kubelet", Subsystem: "certificate_manager", Name: "client_expiration_renew_errors",
			Help: "Counter of certificate renewal errors.",
		}),
		ttlName: "kubelet_certificate_manager_client_ttl_seconds",
		ttlHelp: "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.",
	}
}

// NewServerMetrics are the serving certificate's:
// kubelet_server_expiration_renew_errors,
// kubelet_certificate_manager_server_rotation_seconds and
// kubelet_certificate_manager_server_ttl_seconds.
func NewServerMetrics() *Metrics {
	return &Metrics{
		renewErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "server_expiration_renew_errors",
			Help: "Counter of certificate renewal errors.",
		}),
		rotationAge: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "certificate_manager_server_rotation_seconds",
			Help:    "Histogram of the number of seconds the previous certificate lived before being rotated.",
			Buckets: []float64{60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000},
		}),
		ttlName: "kubelet_certificate_manager_server_ttl_seconds",
		ttlHelp: "Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF.",
	}
}

// Collectors returns the metrics to register, with the TTL of m's
// certificate.
func (mt *Metrics) Collectors(m *Manager) []prometheus.Collector {
	out := []prometheus.Collector{mt.renewErrors}
	if mt.rotationAge != nil {
		out = append(out, mt.rotationAge)
	}
	return append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: mt.ttlName, Help: mt.ttlHelp}, func() float64 {
		if c := m.Current(); c != nil && c.Leaf != nil {
			return math.Trunc(c.Leaf.NotAfter.Sub(m.clock.Now()).Seconds())
		}
		return math.Inf(1)
	}))
}

func (mt *Metrics) renewFailed() {
	if mt != nil {
		mt.renewErrors.Inc()
	}
}

func (mt *Metrics) observeRotation(age time.Duration) {
	if mt != nil && mt.rotationAge != nil {
		mt.rotationAge.Observe(age.Seconds())
	}
}
