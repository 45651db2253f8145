package eviction

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Upstream's eviction metrics.
var (
	evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "evictions",
		Help: "Cumulative number of pod evictions by eviction signal",
	}, []string{"eviction_signal"})
	evictionStatsAge = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubelet", Name: "eviction_stats_age_seconds",
		Help:    "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
		Buckets: prometheus.DefBuckets,
	}, []string{"eviction_signal"})
)

// Collectors are the eviction manager's metrics, for the /metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{evictions, evictionStatsAge}
}

func resourceQuantity(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.BinarySI) }
