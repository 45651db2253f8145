package syncloop

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

var staticAnn = map[string]string{podutil.ConfigSourceAnnotationKey: "file"}

func apiPod(uid string) *v1.Pod {
	return mkPod(uid, "api-"+uid, map[string]string{podutil.ConfigSourceAnnotationKey: podutil.ApiserverSource})
}
func staticPod(uid string) *v1.Pod { return mkPod(uid, "static-"+uid, staticAnn) }

// TestCountPods: housekeeping's counts against upstream's
// HandlePodCleanups for the same pods and workers.
func TestCountPods(t *testing.T) {
	terminal := apiPod("done")
	terminal.Status.Phase = v1.PodSucceeded
	type counts struct {
		desired, active, restarted [2]int
		// working as "lifecycle/config/static" → n; absent means 0.
		working map[string]int
	}
	cases := []struct {
		name        string
		pods        []*v1.Pod
		states      map[types.UID]podworkers.PodState
		runtimeOnly int
		want        counts
		wantRestart []types.UID
	}{
		{
			name: "two running pods, one static",
			pods: []*v1.Pod{apiPod("a"), staticPod("s")},
			states: map[types.UID]podworkers.PodState{
				"a": {Pod: apiPod("a"), State: podworkers.Syncing},
				"s": {Pod: staticPod("s"), State: podworkers.Syncing},
			},
			want: counts{desired: [2]int{1, 1}, active: [2]int{1, 1},
				working: map[string]int{"sync/desired/": 1, "sync/desired/true": 1}},
		},
		{
			name: "terminating and terminated pods are wanted but not active",
			pods: []*v1.Pod{apiPod("a"), staticPod("s"), terminal},
			states: map[types.UID]podworkers.PodState{
				"a":    {Pod: apiPod("a"), State: podworkers.Terminating},
				"s":    {Pod: staticPod("s"), State: podworkers.Syncing},
				"done": {Pod: terminal, State: podworkers.Terminated, Cleaned: true},
			},
			want: counts{desired: [2]int{2, 1}, active: [2]int{0, 1},
				working: map[string]int{"terminating/desired/": 1, "sync/desired/true": 1, "terminated/desired/": 1}},
		},
		{
			name: "workers of pods no source wants are orphans; runtime pods without a worker are runtime_only",
			pods: []*v1.Pod{apiPod("a")},
			states: map[types.UID]podworkers.PodState{
				"a":    {Pod: apiPod("a"), State: podworkers.Syncing},
				"gone": {Pod: staticPod("gone"), State: podworkers.Terminating, Removed: true},
				"del":  {Pod: apiPod("del"), State: podworkers.Terminated, Removed: true},
			},
			runtimeOnly: 2,
			want: counts{desired: [2]int{1, 0}, active: [2]int{1, 0},
				working: map[string]int{"sync/desired/": 1, "terminating/orphan/true": 1, "terminated/orphan/": 1,
					"terminating/runtime_only/unknown": 2}},
		},
		{
			name: "a pod wanted again without a worker (UID reused) is restarted and counted as syncing",
			pods: []*v1.Pod{staticPod("s"), apiPod("a"), terminal},
			states: map[types.UID]podworkers.PodState{
				"a": {Pod: apiPod("a"), State: podworkers.Syncing},
			},
			want: counts{desired: [2]int{2, 1}, active: [2]int{2, 1}, restarted: [2]int{0, 1},
				working: map[string]int{"sync/desired/": 1, "sync/desired/true": 1}},
			wantRestart: []types.UID{"s"},
		},
		{
			name: "nothing",
			want: counts{working: map[string]int{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wanted := map[types.UID]bool{}
			for _, p := range tc.pods {
				wanted[p.UID] = true
			}
			restart := toRestart(tc.pods, tc.states)
			var gotRestart []types.UID
			for _, p := range restart {
				gotRestart = append(gotRestart, p.UID)
			}
			if strings.Join(uidStrings(gotRestart), ",") != strings.Join(uidStrings(tc.wantRestart), ",") {
				t.Fatalf("restart = %v, want %v", gotRestart, tc.wantRestart)
			}
			c := countPods(tc.pods, wanted, tc.states, restart, tc.runtimeOnly)
			if c.desired != tc.want.desired || c.active != tc.want.active || c.restarted != tc.want.restarted {
				t.Errorf("desired %v active %v restarted %v, want %v %v %v", c.desired, c.active, c.restarted,
					tc.want.desired, tc.want.active, tc.want.restarted)
			}
			for cfg, l := range workingConfigLabels {
				for state, lifecycle := range lifecycleLabels {
					key := lifecycle + "/" + l[0] + "/" + l[1]
					if got, want := c.working[cfg][state], tc.want.working[key]; got != want {
						t.Errorf("working %s = %d, want %d", key, got, want)
					}
				}
			}
		})
	}
}

func uidStrings(uids []types.UID) []string {
	out := make([]string, len(uids))
	for i, u := range uids {
		out[i] = string(u)
	}
	return out
}

// TestHousekeepingReportsPodCounts: the families show only once a
// housekeeping pass ran with every source seen, with every series of
// upstream's (zeros too); a static pod added again with the UID of a pod
// that stopped is forgotten, started again with a Create and counted in
// kubelet_restarted_pods_total{static="true"}.
func TestHousekeepingReportsPodCounts(t *testing.T) {
	m := metrics.New()
	pods := podmanager.NewManager()
	a, s := apiPod("a"), staticPod("s")
	pods.AddOrUpdate(a)
	pods.AddOrUpdate(s)
	workers := &fakeWorkers{states: map[types.UID]podworkers.PodState{
		"a": {Pod: a, State: podworkers.Syncing},
		// The static pod was removed and added back with its UID while
		// it stopped: its worker has finished.
		"s": {Pod: s, State: podworkers.Terminated, Removed: true, Cleaned: true, RestartRequested: true},
	}}
	ready := false
	rt := &scriptedRuntime{pods: []*kuberuntime.RunningPod{{UID: "a", Name: "api-a", Namespace: "default"},
		{UID: "stray", Name: "stray", Namespace: "default"}}}
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: rt, SourcesReady: func() bool { return ready }, Metrics: m})
	reg := m.Registry()
	families := []string{"kubelet_desired_pods", "kubelet_active_pods", "kubelet_working_pods", "kubelet_restarted_pods_total"}

	d.HandleHousekeeping(context.Background())
	if n, err := testutil.GatherAndCount(reg, families...); err != nil || n != 0 {
		t.Fatalf("%d series before the sources are ready (err %v), want none", n, err)
	}
	ready = true
	// The stray runtime pod stays in clean-up (runtime_only) while this
	// pass reports: hold its kill.
	d.mu.Lock()
	d.cleaning["stray"] = true
	d.mu.Unlock()
	d.HandleHousekeeping(context.Background())
	if len(workers.updates) != 1 || workers.updates[0].Pod.UID != "s" || workers.updates[0].Type != podworkers.Create {
		t.Fatalf("updates = %+v, want one Create of s", workers.updates)
	}
	want := `
# HELP kubelet_active_pods [ALPHA] The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.
# TYPE kubelet_active_pods gauge
kubelet_active_pods{static=""} 1
kubelet_active_pods{static="true"} 1
# HELP kubelet_desired_pods [ALPHA] The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.
# TYPE kubelet_desired_pods gauge
kubelet_desired_pods{static=""} 1
kubelet_desired_pods{static="true"} 1
# HELP kubelet_restarted_pods_total [ALPHA] Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)
# TYPE kubelet_restarted_pods_total counter
kubelet_restarted_pods_total{static=""} 0
kubelet_restarted_pods_total{static="true"} 1
# HELP kubelet_working_pods [ALPHA] Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible.
# TYPE kubelet_working_pods gauge
kubelet_working_pods{config="desired",lifecycle="sync",static=""} 1
kubelet_working_pods{config="desired",lifecycle="sync",static="true"} 1
kubelet_working_pods{config="desired",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminating",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="runtime_only",lifecycle="sync",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminated",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminating",static="unknown"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), families...); err != nil {
		t.Fatal(err)
	}
	if len(workers.forgotten) != 1 || workers.forgotten[0] != "s" {
		t.Fatalf("forgotten = %v, want [s]", workers.forgotten)
	}
	// The counter adds up over passes; the gauges are set.
	workers.states["s"] = podworkers.PodState{Pod: s, State: podworkers.Syncing}
	d.mu.Lock()
	delete(d.cleaning, "stray")
	d.mu.Unlock()
	rt.pods = rt.pods[:1]
	d.HandleHousekeeping(context.Background())
	if got := testutil.ToFloat64(m.RestartedPods.WithLabelValues("true")); got != 1 {
		t.Errorf("restarted{static=true} = %v after a pass without restarts, want 1", got)
	}
	if got := testutil.ToFloat64(m.WorkingPods.WithLabelValues("terminating", "runtime_only", "unknown")); got != 0 {
		t.Errorf("runtime_only terminating = %v once the stray pod is gone, want 0", got)
	}
}

// A source's ADD of a pod the pod manager does not hold is a Create (the
// workers restart a pod still stopping under that UID); an ADD of a known
// pod is a plain Sync.
func TestAddOfRemovedPodIsCreate(t *testing.T) {
	pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: noRuntime{}})
	s := staticPod("s")
	for _, op := range []sources.Operation{sources.ADD, sources.ADD, sources.REMOVE, sources.ADD} {
		d.HandlePodUpdate(context.Background(), sources.PodUpdate{Op: op, Pods: []*v1.Pod{s}, Source: sources.FileSource})
	}
	var got []string
	for _, u := range workers.updates {
		got = append(got, map[podworkers.UpdateType]string{podworkers.Sync: "sync", podworkers.Kill: "kill", podworkers.Create: "create"}[u.Type])
	}
	if want := "create,sync,kill,create"; strings.Join(got, ",") != want {
		t.Fatalf("updates = %v, want %s", got, want)
	}
}
