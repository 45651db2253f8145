package framework

import (
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// SeriesValues maps each series of a gauge or counter family to its value,
// keyed by its labels as name=value joined with commas (sorted by name, as
// the exposition writes them).
func SeriesValues(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var l []string
		for _, lp := range m.GetLabel() {
			l = append(l, lp.GetName()+"="+lp.GetValue())
		}
		v := m.GetGauge().GetValue()
		if mf.GetType() == dto.MetricType_COUNTER {
			v = m.GetCounter().GetValue()
		}
		out[strings.Join(l, ",")] = v
	}
	return out
}
