package stats

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The claims' volume metrics of upstream's volume stats collector, by the
// claim's namespace and name.
var (
	volumeLabels           = []string{"namespace", "persistentvolumeclaim"}
	volumeCapacityDesc     = prometheus.NewDesc("kubelet_volume_stats_capacity_bytes", "[ALPHA] Capacity in bytes of the volume", volumeLabels, nil)
	volumeAvailableDesc    = prometheus.NewDesc("kubelet_volume_stats_available_bytes", "[ALPHA] Number of available bytes in the volume", volumeLabels, nil)
	volumeUsedDesc         = prometheus.NewDesc("kubelet_volume_stats_used_bytes", "[ALPHA] Number of used bytes in the volume", volumeLabels, nil)
	volumeInodesDesc       = prometheus.NewDesc("kubelet_volume_stats_inodes", "[ALPHA] Maximum number of inodes in the volume", volumeLabels, nil)
	volumeInodesFreeDesc   = prometheus.NewDesc("kubelet_volume_stats_inodes_free", "[ALPHA] Number of free inodes in the volume", volumeLabels, nil)
	volumeInodesUsedDesc   = prometheus.NewDesc("kubelet_volume_stats_inodes_used", "[ALPHA] Number of used inodes in the volume", volumeLabels, nil)
	volumeMetricsDescsList = []*prometheus.Desc{volumeCapacityDesc, volumeAvailableDesc, volumeUsedDesc, volumeInodesDesc, volumeInodesFreeDesc, volumeInodesUsedDesc}
)

// VolumeStatsCollector exposes the last measurements of the pods' claim
// volumes on /metrics as upstream's kubelet_volume_stats_* gauges (a claim
// used by several pods once). Nothing when volume stats are off.
func (p *Provider) VolumeStatsCollector() prometheus.Collector { return volumeStatsCollector{p} }

type volumeStatsCollector struct{ p *Provider }

func (c volumeStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range volumeMetricsDescsList {
		ch <- d
	}
}

func (c volumeStatsCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	if p.volumes == nil || p.cfg.Pods == nil || p.cfg.PluginVolumes == nil {
		return
	}
	seen := map[[2]string]bool{}
	for _, pod := range p.cfg.Pods.List() {
		for _, v := range p.cfg.PluginVolumes(pod) {
			if v.PVC == nil {
				continue
			}
			key := [2]string{v.PVC.Namespace, v.PVC.Name}
			if seen[key] {
				continue
			}
			measure := v.Measure
			s, ok := p.volumes.getWith(v.Path, func(string) (volumeSample, error) {
				u, err := measure()
				return u.sample(), err
			})
			if !ok {
				continue
			}
			seen[key] = true
			for _, m := range []struct {
				d *prometheus.Desc
				v uint64
			}{
				{volumeCapacityDesc, s.Fs.Capacity}, {volumeAvailableDesc, s.Fs.Available}, {volumeUsedDesc, s.Usage.Bytes},
				{volumeInodesDesc, s.Fs.Inodes}, {volumeInodesFreeDesc, s.Fs.InodesFree}, {volumeInodesUsedDesc, s.Usage.Inodes},
			} {
				ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, float64(m.v), key[0], key[1])
			}
		}
	}
}
