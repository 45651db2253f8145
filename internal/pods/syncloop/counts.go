package syncloop

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
)

// workingConfig is the config and static label pair of
// kubelet_working_pods: whether a worker's pod is still wanted by a source
// (desired) or not (orphan), and whether it is static; runtime_only pods
// are found in the runtime without a worker (their static is unknown).
type workingConfig int

const (
	desiredRegular workingConfig = iota
	desiredStatic
	orphanRegular
	orphanStatic
	runtimeOnly
	numWorkingConfigs
)

// Label values of kubelet_working_pods, as upstream's HandlePodCleanups
// writes them: config, static, and lifecycle by podworkers.State.
var (
	workingConfigLabels = [numWorkingConfigs][2]string{
		desiredRegular: {"desired", ""},
		desiredStatic:  {"desired", "true"},
		orphanRegular:  {"orphan", ""},
		orphanStatic:   {"orphan", "true"},
		runtimeOnly:    {"runtime_only", "unknown"},
	}
	lifecycleLabels = [...]string{podworkers.Syncing: "sync", podworkers.Terminating: "terminating", podworkers.Terminated: "terminated"}
	// staticLabels index by 0 (not static: upstream's "") and 1.
	staticLabels = [2]string{"", "true"}
)

// podCounts are what housekeeping reports: per static (index 0: "", 1:
// "true"), the pods wanted, the active ones and those restarted in this
// pass; per config and lifecycle, the pod workers.
type podCounts struct {
	desired, active, restarted [2]int
	working                    [numWorkingConfigs][len(lifecycleLabels)]int
}

func staticIndex(p *v1.Pod) int {
	if p != nil && podutil.IsStaticPod(p) {
		return 1
	}
	return 0
}

// toRestart returns the pods a source wants that have no worker (their
// old one was forgotten after a RestartRequested) and are not terminal by
// their source's phase (upstream's filterOutInactivePods): they must be
// started again. Pure; nil when there are none.
func toRestart(pods []*v1.Pod, states map[types.UID]podworkers.PodState) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if _, ok := states[p.UID]; ok || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	return out
}

// countPods decides housekeeping's pod counts, as upstream's
// HandlePodCleanups: pods are the ones the sources want (mirror pods
// excluded) and wanted their UIDs, states the pod workers left after finished ones were
// forgotten, restart the pods being started again in this pass (workers
// now syncing) and runtimeOnly the pods the runtime runs that no source
// or worker knows (being stopped). Active pods are those podworkers.Active
// keeps: without a worker yet, or still syncing. Pure.
func countPods(pods []*v1.Pod, wanted map[types.UID]bool, states map[types.UID]podworkers.PodState, restart []*v1.Pod, runtimeOnlyPods int) podCounts {
	var c podCounts
	for _, p := range pods {
		i := staticIndex(p)
		c.desired[i]++
		if s, ok := states[p.UID]; !ok || s.State == podworkers.Syncing {
			c.active[i]++
		}
	}
	for uid, s := range states {
		static := staticIndex(s.Pod)
		cfg := desiredRegular
		if !wanted[uid] {
			cfg = orphanRegular
		}
		c.working[cfg+workingConfig(static)][s.State]++
	}
	for _, p := range restart {
		i := staticIndex(p)
		c.restarted[i]++
		c.working[desiredRegular+workingConfig(i)][podworkers.Syncing]++
	}
	c.working[runtimeOnly][podworkers.Terminating] += runtimeOnlyPods
	return c
}

// podCountSeries are the pod count families' series, resolved once.
type podCountSeries struct {
	desired, active [2]prometheus.Gauge
	restarted       [2]prometheus.Counter
	working         [numWorkingConfigs][len(lifecycleLabels)]prometheus.Gauge
}

func newPodCountSeries(m *metrics.Metrics) *podCountSeries {
	s := &podCountSeries{}
	for i, v := range staticLabels {
		s.desired[i] = m.DesiredPods.WithLabelValues(v)
		s.active[i] = m.ActivePods.WithLabelValues(v)
		s.restarted[i] = m.RestartedPods.WithLabelValues(v)
	}
	for cfg, l := range workingConfigLabels {
		for state, lifecycle := range lifecycleLabels {
			s.working[cfg][state] = m.WorkingPods.WithLabelValues(lifecycle, l[0], l[1])
		}
	}
	return s
}

// reportCounts writes c to the pod count families: every series of
// upstream's, zeros too.
func (d *Dispatcher) reportCounts(c podCounts) {
	if d.gauges == nil {
		d.gauges = newPodCountSeries(d.cfg.Metrics)
	}
	g := d.gauges
	for i := range staticLabels {
		g.desired[i].Set(float64(c.desired[i]))
		g.active[i].Set(float64(c.active[i]))
		g.restarted[i].Add(float64(c.restarted[i]))
	}
	for cfg := range c.working {
		for state, n := range c.working[cfg] {
			g.working[cfg][state].Set(float64(n))
		}
	}
}
