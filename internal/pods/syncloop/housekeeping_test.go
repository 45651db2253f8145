package syncloop

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// waitIdle returns once no orphan clean-up runs in the background. It
// yields instead of sleeping; the clean-up goroutines do not wait on time.
func waitIdle(d *Dispatcher) {
	for {
		d.mu.Lock()
		busy := len(d.cleaning)
		d.mu.Unlock()
		if busy == 0 {
			return
		}
		runtime.Gosched()
	}
}

// scriptedRuntime answers housekeeping's runtime calls from canned data
// and records them.
type scriptedRuntime struct {
	mu        sync.Mutex
	pods      []*kuberuntime.RunningPod
	listErr   error
	statusErr error
	killErr   error
	keep      map[types.UID]bool
	calls     []string // housekeeping's own calls
	bg        []string // calls of the background clean-up
}

func (r *scriptedRuntime) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *scriptedRuntime) recordBackground(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bg = append(r.bg, call)
}

func (r *scriptedRuntime) recorded() (calls, bg []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...), append([]string(nil), r.bg...)
}

func (r *scriptedRuntime) GetPods(context.Context, bool) ([]*kuberuntime.RunningPod, error) {
	r.record("GetPods")
	return r.pods, r.listErr
}

func (r *scriptedRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*kuberuntime.PodStatus, error) {
	r.recordBackground("GetPodStatus " + string(uid))
	return &kuberuntime.PodStatus{UID: uid, Name: name, Namespace: ns}, r.statusErr
}

func (r *scriptedRuntime) KillPod(_ context.Context, pod *v1.Pod, st *kuberuntime.PodStatus, _ *int64) error {
	if pod != nil {
		r.recordBackground("KillPod with a spec")
	}
	r.recordBackground("KillPod " + string(st.UID))
	return r.killErr
}

func (r *scriptedRuntime) RemovePod(_ context.Context, st *kuberuntime.PodStatus) error {
	r.recordBackground("RemovePod " + string(st.UID))
	return nil
}

func (r *scriptedRuntime) CleanupOrphanedPodDirs(keep map[types.UID]bool) {
	r.record("CleanupOrphanedPodDirs")
	r.keep = keep
}

// TestHousekeeping: what one housekeeping pass does, as upstream's
// HandlePodCleanups: finished workers of pods nobody wants are forgotten;
// once every source has been seen, orphaned mirror pods are deleted, pods
// the runtime runs that nobody wants are stopped and removed, and the
// cgroups and directories of pods neither wanted nor running go.
func TestHousekeeping(t *testing.T) {
	running := func(uids ...types.UID) []*kuberuntime.RunningPod {
		var out []*kuberuntime.RunningPod
		for _, uid := range uids {
			out = append(out, &kuberuntime.RunningPod{UID: uid, Name: "n-" + string(uid), Namespace: "ns"})
		}
		return out
	}
	type want struct {
		calls     []string // housekeeping's runtime calls, in order
		bg        []string // the background clean-up's, in order
		forgotten []types.UID
		keep      []types.UID // the keep set of cgroups and directories; nil: not cleaned
		orphans   int         // DeleteOrphans calls
		extra     int         // OnHousekeeping calls
	}
	cases := []struct {
		name         string
		desired      []types.UID
		states       map[types.UID]podworkers.PodState
		sourcesReady bool
		rt           *scriptedRuntime
		want         want
	}{
		{
			name:    "finished workers of pods no source wants are forgotten",
			desired: []types.UID{"wanted"},
			states: map[types.UID]podworkers.PodState{
				"gone":        {State: podworkers.Terminated, Cleaned: true},
				"not-cleaned": {State: podworkers.Terminated},
				"wanted":      {State: podworkers.Terminated, Cleaned: true},
				"stopping":    {State: podworkers.Terminating},
			},
			sourcesReady: true,
			rt:           &scriptedRuntime{},
			want: want{calls: []string{"GetPods", "CleanupOrphanedPodDirs"}, forgotten: []types.UID{"gone"},
				keep: []types.UID{"not-cleaned", "stopping", "wanted"}, orphans: 1, extra: 1},
		},
		{
			name:    "before every source has been seen nothing on the runtime is touched",
			desired: []types.UID{"a"},
			states:  map[types.UID]podworkers.PodState{"gone": {State: podworkers.Terminated, Cleaned: true}},
			rt:      &scriptedRuntime{pods: running("orphan")},
			want:    want{forgotten: []types.UID{"gone"}, extra: 1},
		},
		{
			name:         "pods running that nobody wants are stopped without a spec and removed",
			desired:      []types.UID{"a"},
			states:       map[types.UID]podworkers.PodState{"b": {State: podworkers.Terminating}},
			sourcesReady: true,
			rt:           &scriptedRuntime{pods: running("a", "b", "orphan")},
			want: want{calls: []string{"GetPods", "CleanupOrphanedPodDirs"}, bg: []string{"GetPodStatus orphan", "KillPod orphan", "RemovePod orphan"},
				keep: []types.UID{"a", "b", "orphan"}, orphans: 1, extra: 1},
		},
		{
			name:         "an orphan whose status cannot be read is left for the next pass",
			sourcesReady: true,
			rt:           &scriptedRuntime{pods: running("orphan"), statusErr: errors.New("boom")},
			want: want{calls: []string{"GetPods", "CleanupOrphanedPodDirs"}, bg: []string{"GetPodStatus orphan"},
				keep: []types.UID{"orphan"}, orphans: 1, extra: 1},
		},
		{
			name:         "an orphan that cannot be stopped is not removed",
			sourcesReady: true,
			rt:           &scriptedRuntime{pods: running("orphan"), killErr: errors.New("boom")},
			want: want{calls: []string{"GetPods", "CleanupOrphanedPodDirs"}, bg: []string{"GetPodStatus orphan", "KillPod orphan"},
				keep: []types.UID{"orphan"}, orphans: 1, extra: 1},
		},
		{
			name:         "the runtime cannot be listed: nothing is cleaned",
			desired:      []types.UID{"a"},
			sourcesReady: true,
			rt:           &scriptedRuntime{listErr: errors.New("unavailable")},
			want:         want{calls: []string{"GetPods"}, orphans: 1, extra: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := podmanager.NewManager()
			for _, uid := range tc.desired {
				pods.AddOrUpdate(mkPod(string(uid), string(uid), nil))
			}
			workers := &fakeWorkers{states: tc.states}
			if workers.states == nil {
				workers.states = map[types.UID]podworkers.PodState{}
			}
			mirrors := &fakeMirrors{}
			var keep []types.UID
			cgroupsCleaned, extra := false, 0
			var eventsForgotten []types.UID
			d := NewDispatcher(DispatcherConfig{
				Pods: pods, Workers: workers, Runtime: tc.rt, Mirrors: mirrors,
				SourcesReady:   func() bool { return tc.sourcesReady },
				OnHousekeeping: func(context.Context) { extra++ },
				ForgetEvents:   func(uid types.UID) { eventsForgotten = append(eventsForgotten, uid) },
				CleanupPodCgroups: func(k map[types.UID]bool) {
					cgroupsCleaned = true
					for uid := range k {
						keep = append(keep, uid)
					}
				},
			})
			d.HandleHousekeeping(context.Background())
			waitIdle(d)

			calls, bg := tc.rt.recorded()
			if !reflect.DeepEqual(calls, tc.want.calls) || !reflect.DeepEqual(bg, tc.want.bg) {
				t.Errorf("runtime calls %v then in the background %v; want %v then %v", calls, bg, tc.want.calls, tc.want.bg)
			}
			sort.Slice(workers.forgotten, func(i, j int) bool { return workers.forgotten[i] < workers.forgotten[j] })
			if !reflect.DeepEqual(workers.forgotten, tc.want.forgotten) {
				t.Errorf("forgotten %v, want %v", workers.forgotten, tc.want.forgotten)
			}
			// The event correlator forgets exactly the pods whose workers go.
			sort.Slice(eventsForgotten, func(i, j int) bool { return eventsForgotten[i] < eventsForgotten[j] })
			if !reflect.DeepEqual(eventsForgotten, tc.want.forgotten) {
				t.Errorf("events forgotten for %v, want %v", eventsForgotten, tc.want.forgotten)
			}
			sort.Slice(keep, func(i, j int) bool { return keep[i] < keep[j] })
			if cgroupsCleaned != (tc.want.keep != nil) || !reflect.DeepEqual(keep, tc.want.keep) {
				t.Errorf("cgroups cleaned %v keeping %v, want keeping %v", cgroupsCleaned, keep, tc.want.keep)
			}
			if tc.want.keep != nil && len(tc.rt.keep) != len(tc.want.keep) {
				t.Errorf("directories kept for %v, want %v", tc.rt.keep, tc.want.keep)
			}
			if mirrors.orphans != tc.want.orphans || extra != tc.want.extra {
				t.Errorf("orphaned mirrors deleted %d times, extra housekeeping %d; want %d, %d", mirrors.orphans, extra, tc.want.orphans, tc.want.extra)
			}
		})
	}
}

// Housekeeping has the runtime manager clean up the directories of every
// pod that is neither wanted nor on the runtime.
func TestHousekeepingKeepsKnownAndRunningPodDirs(t *testing.T) {
	pods := podmanager.NewManager()
	pods.AddOrUpdate(mkPod("known", "known", nil))
	rt := &scriptedRuntime{pods: []*kuberuntime.RunningPod{{UID: "running", Name: "r", Namespace: "default"}}}
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: &fakeWorkers{states: map[types.UID]podworkers.PodState{}}, Runtime: rt})
	d.HandleHousekeeping(context.Background())
	if want := map[types.UID]bool{"known": true, "running": true}; !reflect.DeepEqual(rt.keep, want) {
		t.Fatalf("directories kept for %v, want %v", rt.keep, want)
	}
}

// gatedRuntime is a runtime manager whose KillPod waits for the test.
type gatedRuntime struct {
	*kuberuntime.Manager
	killing chan types.UID
	release chan struct{}
}

func (g *gatedRuntime) KillPod(ctx context.Context, pod *v1.Pod, st *kuberuntime.PodStatus, grace *int64) error {
	g.killing <- st.UID
	<-g.release
	return g.Manager.KillPod(ctx, pod, st, grace)
}

// An orphan found on a real (fake CRI) runtime is stopped and removed in
// the background: the loop does not wait for its grace period, a second
// pass meanwhile does not start a second clean-up, and pods a source wants
// are left running.
func TestHousekeepingCleansUpOrphansInTheBackground(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	cri := critest.New(t, clk)
	dir := t.TempDir()
	m := kuberuntime.NewManager(kuberuntime.Config{
		Runtime: cri.RuntimeClient, Clock: clk, Recorder: events.LogRecorder{},
		Images: kuberuntime.NewImagePuller(kuberuntime.ImageConfig{Images: cri.ImageClient, Clock: clk, Recorder: events.LogRecorder{}}),
		Spec:   criconfig.Options{PodLogsDir: filepath.Join(dir, "logs")}, PodsDir: filepath.Join(dir, "pods"),
	})
	ctx := context.Background()
	start := func(uid string) *v1.Pod {
		p := mkPod(uid, uid, nil)
		p.Spec.DNSPolicy = v1.DNSDefault
		p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox"}}
		st, err := m.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if res := m.SyncPod(ctx, kuberuntime.Inputs{Pod: p, Status: st}); res.Err != nil {
			t.Fatal(res.Err)
		}
		return p
	}
	wanted, orphan := start("wanted"), start("orphan")
	pods := podmanager.NewManager()
	pods.AddOrUpdate(wanted)
	rt := &gatedRuntime{Manager: m, killing: make(chan types.UID, 10), release: make(chan struct{})}
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: &fakeWorkers{states: map[types.UID]podworkers.PodState{}}, Runtime: rt})

	d.HandleHousekeeping(ctx) // returns while the orphan's KillPod waits
	if uid := <-rt.killing; uid != orphan.UID {
		t.Fatalf("killing %s, want the orphan", uid)
	}
	d.HandleHousekeeping(ctx)
	close(rt.release)
	waitIdle(d)
	select {
	case uid := <-rt.killing:
		t.Fatalf("a second clean-up of %s started while the first ran", uid)
	default:
	}

	left, err := m.GetPods(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].UID != wanted.UID || left[0].Containers[0].State != kuberuntime.StateRunning {
		t.Fatalf("left on the runtime: %+v; want only the wanted pod, running", left)
	}
}
