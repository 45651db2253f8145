package pleg

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var relistDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Subsystem: "kubelet",
	Name:      "pleg_relist_duration_seconds",
	Help:      "Duration in seconds for relisting pods in PLEG.",
	Buckets:   prometheus.ExponentialBuckets(0.005, 2, 12),
})

// Collectors are the PLEG's metrics, for the registry the server exposes.
func Collectors() []prometheus.Collector { return []prometheus.Collector{relistDuration} }

func errNotHealthy(since, threshold time.Duration) error {
	return fmt.Errorf("pleg was last seen active %v ago; threshold is %v", since.Round(time.Millisecond), threshold)
}
