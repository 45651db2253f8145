package eviction

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

// storagePod has an emptyDir "scratch" (sizeLimit when given) and
// containers with the given ephemeral-storage limits ("" for none).
func storagePod(sizeLimit string, limits ...string) *v1.Pod {
	p := testPod("p", "", 0)
	ed := &v1.EmptyDirVolumeSource{}
	if sizeLimit != "" {
		q := resource.MustParse(sizeLimit)
		ed.SizeLimit = &q
	}
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: ed}}}
	p.Spec.Containers = nil
	for i, l := range limits {
		c := v1.Container{Name: []string{"a", "b", "c"}[i]}
		if l != "" {
			c.Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(l)}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

// usage is a pod's stats: the emptyDir's bytes, the pod total, and per
// container rootfs and logs bytes.
func usage(p *v1.Pod, scratch, total int64, containers ...[2]int64) statsapi.PodStats {
	ps := statsapi.PodStats{
		PodRef:           statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
		VolumeStats:      []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: u64(scratch)}}},
		EphemeralStorage: &statsapi.FsStats{UsedBytes: u64(total)},
	}
	for i, c := range containers {
		ps.Containers = append(ps.Containers, statsapi.ContainerStats{Name: p.Spec.Containers[i].Name,
			Rootfs: &statsapi.FsStats{UsedBytes: u64(c[0])}, Logs: &statsapi.FsStats{UsedBytes: u64(c[1])}})
	}
	return ps
}

// Upstream's localStorageEviction, case by case, with its messages.
func TestLocalStorageLimitExceeded(t *testing.T) {
	withInit := storagePod("", "10Mi")
	withInit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("50Mi")}}}}
	memory := storagePod("1Mi")
	memory.Spec.Volumes[0].EmptyDir.Medium = v1.StorageMediumMemory
	overhead := storagePod("", "10Mi")
	overhead.Spec.Overhead = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("5Mi")}
	cases := []struct {
		name      string
		pod       *v1.Pod
		stats     func(p *v1.Pod) statsapi.PodStats
		dedicated bool
		want      string // message; "" for none
		signal    string
	}{
		{name: "emptyDir within its sizeLimit", pod: storagePod("10Mi"), stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 10*mi, 10*mi) }},
		{name: "emptyDir over its sizeLimit", pod: storagePod("10Mi"), stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 10*mi+1, 11*mi) },
			want: `Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". `, signal: SignalEmptyDirFsLimit},
		{name: "memory emptyDir over its sizeLimit", pod: memory, stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 2*mi, 0) },
			want: `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `, signal: SignalEmptyDirFsLimit},
		{name: "emptyDir without a sizeLimit", pod: storagePod(""), stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 1<<40, 1<<40) }},
		{name: "zero sizeLimit means none", pod: storagePod("0"), stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, mi, mi) }},
		{name: "pod over the sum of its containers' limits", pod: storagePod("", "10Mi", "20Mi", ""),
			stats: func(p *v1.Pod) statsapi.PodStats {
				return usage(p, 0, 31*mi, [2]int64{mi, 0}, [2]int64{mi, 0}, [2]int64{mi, 0})
			},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 30Mi. ", signal: SignalEphemeralPodFsLimit},
		{name: "emptyDir checked before the pod total", pod: storagePod("1Mi", "10Mi"),
			stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 2*mi, 40*mi, [2]int64{0, 0}) },
			want:  `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `, signal: SignalEmptyDirFsLimit},
		{name: "init container limit raises the pod's", pod: withInit,
			stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 0, 40*mi, [2]int64{mi, 0}) }},
		{name: "overhead raises the pod's limit", pod: overhead,
			stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 0, 12*mi, [2]int64{mi, 0}) }},
		{name: "container's writable layer and logs over its limit", pod: storagePod("", "", "5Mi"),
			stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 0, 0, [2]int64{0, 0}, [2]int64{3 * mi, 3 * mi}) },
			want:  `Container b exceeded its local ephemeral storage limit "5Mi". `, signal: SignalEphemeralContainerFsLimit},
		{name: "dedicated imagefs: only logs count", pod: storagePod("", "", "5Mi"), dedicated: true,
			stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 0, 0, [2]int64{0, 0}, [2]int64{3 * mi, 3 * mi}) }},
		{name: "dedicated imagefs: logs over", pod: storagePod("", "5Mi"), dedicated: true,
			stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 0, 0, [2]int64{0, 6 * mi}) },
			want:  `Container a exceeded its local ephemeral storage limit "5Mi". `, signal: SignalEphemeralContainerFsLimit},
		{name: "no limits at all", pod: storagePod(""), stats: func(p *v1.Pod) statsapi.PodStats { return usage(p, 0, 1<<40) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, over := LocalStorageLimitExceeded(tc.pod, tc.stats(tc.pod), tc.dedicated)
			if over != (tc.want != "") || v.Message != tc.want || v.Signal != tc.signal {
				t.Fatalf("got %v %+v, want %q (%s)", over, v, tc.want, tc.signal)
			}
		})
	}
}

// Each round evicts every pod over its own limits, at once, with
// upstream's status (no DisruptionTarget), event and metric, even with no
// eviction thresholds configured; critical pods stay; nothing else happens
// in that round.
func TestManagerEvictsPodsOverTheirStorageLimits(t *testing.T) {
	f := newFakeNode()
	over, within, critical := storagePod("1Mi"), storagePod("1Mi"), storagePod("1Mi")
	within.Name, within.UID = "within", "within-uid"
	critical.Name, critical.UID = "static", "static-uid"
	critical.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	hog := storagePod("", "10Mi")
	hog.Name, hog.UID = "hog", "hog-uid"
	f.pods = []*v1.Pod{over, within, critical, hog}
	stats := map[string]statsapi.PodStats{
		"p": usage(over, 2*mi, 2*mi), "within": usage(within, mi, mi), "static": usage(critical, 2*mi, 2*mi),
		"hog": usage(hog, 0, 0, [2]int64{20 * mi, 0}),
	}
	summary := summaryFunc(func() *statsapi.Summary {
		s := nodeSummary(f.clock.Now(), 1024*mi, 100*mi)
		for _, p := range f.active() {
			s.Pods = append(s.Pods, stats[p.Name])
		}
		return s
	})
	met := metrics.New()
	before := testutil.ToFloat64(met.Evictions.WithLabelValues(SignalEmptyDirFsLimit))
	m, err := New(Config{Summary: summary, ActivePods: f.active, Killer: f, Recorder: f, Clock: f.clock, LocalStorageCapacityIsolation: true, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	evicted, err := m.Synchronize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(evicted), ","); got != "p,hog" {
		t.Fatalf("evicted %s, want p,hog", got)
	}
	st := f.statuses["p"]
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` || len(st.Conditions) != 0 {
		t.Fatalf("status %+v", st)
	}
	if f.graces["p"] != 1 || f.graces["hog"] != 1 {
		t.Fatalf("grace periods %v, want 1 (immediate)", f.graces)
	}
	wantEvents := []string{
		`pod p Warning Evicted: Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `,
		`pod hog Warning Evicted: Container a exceeded its local ephemeral storage limit "10Mi". `,
	}
	if strings.Join(f.events, "\n") != strings.Join(wantEvents, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(f.events, "\n"), strings.Join(wantEvents, "\n"))
	}
	if got := testutil.ToFloat64(met.Evictions.WithLabelValues(SignalEmptyDirFsLimit)) - before; got != 1 {
		t.Fatalf("kubelet_evictions{eviction_signal=%q} rose by %v, want 1", SignalEmptyDirFsLimit, got)
	}
	// Isolation off: nothing.
	f.pods = []*v1.Pod{within, critical}
	stats["within"] = usage(within, 5*mi, 5*mi)
	off, _ := New(Config{Summary: summary, ActivePods: f.active, Killer: f, Recorder: f, Clock: f.clock})
	if ev, _ := off.Synchronize(context.Background()); len(ev) != 0 {
		t.Fatalf("evicted %v with localStorageCapacityIsolation off", names(ev))
	}
}

type summaryFunc func() *statsapi.Summary

func (f summaryFunc) Summary(context.Context, bool) (*statsapi.Summary, error) { return f(), nil }
