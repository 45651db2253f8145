package syncloop

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

type recordingHandler struct{ calls []string }

func (h *recordingHandler) HandlePodUpdate(ctx context.Context, u sources.PodUpdate) {
	h.calls = append(h.calls, "config "+u.Op.String())
}
func (h *recordingHandler) HandlePLEGEvent(ctx context.Context, e pleg.Event) {
	h.calls = append(h.calls, "pleg "+string(e.Type))
}
func (h *recordingHandler) HandleProbeUpdate(ctx context.Context, u prober.Update) {
	h.calls = append(h.calls, "probe "+u.Type.String())
}
func (h *recordingHandler) HandleSyncTick(ctx context.Context) { h.calls = append(h.calls, "sync") }
func (h *recordingHandler) HandleHousekeeping(ctx context.Context) {
	h.calls = append(h.calls, "housekeeping")
}

func TestIteration(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		fill     func(cfg chan sources.PodUpdate, pl chan pleg.Event, sync, hk chan time.Time)
		want     string
		wantMore bool
	}{
		{name: "config update", fill: func(c chan sources.PodUpdate, _ chan pleg.Event, _, _ chan time.Time) {
			c <- sources.PodUpdate{Op: sources.ADD}
		}, want: "config ADD", wantMore: true},
		{name: "pleg event", fill: func(_ chan sources.PodUpdate, p chan pleg.Event, _, _ chan time.Time) {
			p <- pleg.Event{Type: pleg.ContainerDied}
		}, want: "pleg ContainerDied", wantMore: true},
		{name: "sync tick", fill: func(_ chan sources.PodUpdate, _ chan pleg.Event, s, _ chan time.Time) { s <- time.Now() }, want: "sync", wantMore: true},
		{name: "housekeeping", fill: func(_ chan sources.PodUpdate, _ chan pleg.Event, _, h chan time.Time) { h <- time.Now() }, want: "housekeeping", wantMore: true},
		{name: "closed config channel stops the loop", fill: func(c chan sources.PodUpdate, _ chan pleg.Event, _, _ chan time.Time) { close(c) }, wantMore: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, pl, sync, hk := make(chan sources.PodUpdate, 1), make(chan pleg.Event, 1), make(chan time.Time, 1), make(chan time.Time, 1)
			tc.fill(cfg, pl, sync, hk)
			h := &recordingHandler{}
			more := Iteration(ctx, Channels{Config: cfg, PLEG: pl, Sync: sync, Housekeeping: hk}, h)
			if more != tc.wantMore {
				t.Fatalf("Iteration returned %v, want %v", more, tc.wantMore)
			}
			if tc.want != "" && (len(h.calls) != 1 || h.calls[0] != tc.want) {
				t.Fatalf("calls %v, want [%s]", h.calls, tc.want)
			}
		})
	}
}

func TestHousekeepingWaitsForPendingConfig(t *testing.T) {
	cfg, hk := make(chan sources.PodUpdate, 2), make(chan time.Time, 1)
	cfg <- sources.PodUpdate{Op: sources.ADD}
	hk <- time.Now()
	h := &recordingHandler{}
	// Whatever the select picks, housekeeping never runs before the update.
	for i := 0; i < 2; i++ {
		Iteration(context.Background(), Channels{Config: cfg, Housekeeping: hk}, h)
	}
	if len(h.calls) == 0 || h.calls[0] != "config ADD" {
		t.Fatalf("calls %v: housekeeping ran while a config update was pending", h.calls)
	}
}

type fakeWorkers struct {
	updates   []podworkers.Update
	synced    []types.UID
	states    map[types.UID]podworkers.PodState
	known     map[types.UID]bool // Sync's answer; nil answers true
	due       int
	forgotten []types.UID
}

func (f *fakeWorkers) UpdatePod(u podworkers.Update) { f.updates = append(f.updates, u) }
func (f *fakeWorkers) Sync(uid types.UID) bool {
	f.synced = append(f.synced, uid)
	return f.known == nil || f.known[uid]
}
func (f *fakeWorkers) SyncDue() { f.due++ }

// States returns a copy, as the real workers do.
func (f *fakeWorkers) States() map[types.UID]podworkers.PodState {
	out := make(map[types.UID]podworkers.PodState, len(f.states))
	for uid, s := range f.states {
		out[uid] = s
	}
	return out
}
func (f *fakeWorkers) Forget(uid types.UID) bool {
	f.forgotten = append(f.forgotten, uid)
	delete(f.states, uid)
	return true
}

type fakeMirrors struct {
	deleted []string
	err     error
	orphans int // DeleteOrphans calls
}

func (f *fakeMirrors) Delete(ctx context.Context, mp *v1.Pod) error {
	f.deleted = append(f.deleted, mp.Name)
	return f.err
}
func (f *fakeMirrors) DeleteOrphans(ctx context.Context) { f.orphans++ }

type noRuntime struct{}

func (noRuntime) GetPods(context.Context, bool) ([]*kuberuntime.RunningPod, error) { return nil, nil }
func (noRuntime) GetPodStatus(context.Context, types.UID, string, string) (*kuberuntime.PodStatus, error) {
	return &kuberuntime.PodStatus{}, nil
}
func (noRuntime) KillPod(context.Context, *v1.Pod, *kuberuntime.PodStatus, *int64) error { return nil }
func (noRuntime) RemovePod(context.Context, *kuberuntime.PodStatus) error                { return nil }
func (noRuntime) CleanupOrphanedPodDirs(map[types.UID]bool)                              {}

func mkPod(uid, name string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default", Annotations: annotations}}
}

func TestDispatcherAdmission(t *testing.T) {
	pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
	var rejected []string
	d := NewDispatcher(DispatcherConfig{
		Pods: pods, Workers: workers, Runtime: noRuntime{},
		Admit: func(p *v1.Pod, active []*v1.Pod) (bool, string, string) {
			if len(active) >= 1 {
				return false, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"
			}
			return true, "", ""
		},
		Reject: func(p *v1.Pod, reason, message string) { rejected = append(rejected, p.Name+":"+reason) },
	})
	ctx := context.Background()
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{mkPod("a", "a", nil)}})
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{mkPod("b", "b", nil)}})
	if len(workers.updates) != 1 || workers.updates[0].Pod.Name != "a" {
		t.Fatalf("worker updates %v: only the admitted pod may start", workers.updates)
	}
	if len(rejected) != 1 || rejected[0] != "b:OutOfpods" {
		t.Fatalf("rejected %v", rejected)
	}
	// A later update of a rejected pod must not start it either.
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.UPDATE, Pods: []*v1.Pod{mkPod("b", "b", nil)}})
	if len(workers.updates) != 1 {
		t.Fatalf("a rejected pod was started by an UPDATE: %v", workers.updates)
	}
}

func TestDispatcherMirrorPods(t *testing.T) {
	pods, workers, mirrors := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}, &fakeMirrors{}
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: noRuntime{}, Mirrors: mirrors})
	ctx := context.Background()
	static := mkPod("s", "etcd-n", map[string]string{podutil.ConfigSourceAnnotationKey: "file", podutil.ConfigHashAnnotationKey: "s"})
	mp := mkPod("m", "etcd-n", map[string]string{podutil.ConfigMirrorAnnotationKey: "s"})
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{static}})
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{mp}})
	if len(workers.updates) != 1 {
		t.Fatalf("a mirror pod got a worker: %v", workers.updates)
	}
	// A user deletes the mirror pod: it is removed now and its static pod synced (to recreate it).
	deleting := mp.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.DELETE, Pods: []*v1.Pod{deleting}})
	if len(mirrors.deleted) != 1 || len(workers.synced) != 1 || workers.synced[0] != "s" {
		t.Fatalf("mirror deletes %v, syncs %v", mirrors.deleted, workers.synced)
	}
}

// A status-only change from the API (RECONCILE) reaches the pod's worker only
// when it changes what the readiness gates say.
func TestDispatcherReconcileReadinessGates(t *testing.T) {
	pods, workers := podmanager.NewManager(), &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
	d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: noRuntime{}})
	ctx := context.Background()
	p := mkPod("g", "gated", nil)
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.ADD, Pods: []*v1.Pod{p}})

	// The kubelet's own status comes back: Ready False for the missing gate.
	own := p.DeepCopy()
	own.Status.Conditions = []v1.PodCondition{
		{Type: v1.ContainersReady, Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionFalse, Message: `corresponding condition of pod readiness gate "example.com/ready" does not exist.`},
	}
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.RECONCILE, Pods: []*v1.Pod{own}})
	if len(workers.updates) != 1 {
		t.Fatalf("worker updates %d after the kubelet's own status came back, want none new", len(workers.updates))
	}
	// A controller sets the gate's condition True.
	patched := own.DeepCopy()
	patched.Status.Conditions = append(patched.Status.Conditions, v1.PodCondition{Type: "example.com/ready", Status: v1.ConditionTrue})
	d.HandlePodUpdate(ctx, sources.PodUpdate{Op: sources.RECONCILE, Pods: []*v1.Pod{patched}})
	if len(workers.updates) != 2 || workers.updates[1].Type != podworkers.Sync || len(workers.updates[1].Pod.Status.Conditions) != 3 {
		t.Fatalf("worker updates %+v: want a sync with the patched pod", workers.updates)
	}
	if got, _ := pods.Get("g"); len(got.Status.Conditions) != 3 {
		t.Fatalf("pod manager holds %+v, want the patched status", got.Status.Conditions)
	}
}

// Run hands every input to the handler in turn and returns when its
// context ends.
func TestRun(t *testing.T) {
	cfg, pl := make(chan sources.PodUpdate), make(chan pleg.Event)
	sync, hk := make(chan time.Time), make(chan time.Time)
	probes := make(chan prober.Update)
	h := &blockingHandler{calls: make(chan string)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	chans := Channels{Config: cfg, PLEG: pl, Probes: probes, Sync: sync, Housekeeping: hk}
	go func() { Run(ctx, chans, h); close(done) }()
	cfg <- sources.PodUpdate{Op: sources.ADD}
	if c := <-h.calls; c != "config ADD" {
		t.Fatalf("handled %q", c)
	}
	pl <- pleg.Event{Type: pleg.ContainerStarted}
	if c := <-h.calls; c != "pleg ContainerStarted" {
		t.Fatalf("handled %q", c)
	}
	probes <- prober.Update{PodUID: "p"}
	if c := <-h.calls; c != "probe p" {
		t.Fatalf("handled %q", c)
	}
	hk <- time.Unix(0, 0)
	if c := <-h.calls; c != "housekeeping" {
		t.Fatalf("handled %q", c)
	}
	cancel()
	<-done
	if Iteration(ctx, chans, h) {
		t.Fatal("an iteration after the context ended asks for more")
	}
}

// blockingHandler reports each call on a channel.
type blockingHandler struct{ calls chan string }

func (h *blockingHandler) HandlePodUpdate(_ context.Context, u sources.PodUpdate) {
	h.calls <- "config " + u.Op.String()
}
func (h *blockingHandler) HandlePLEGEvent(_ context.Context, e pleg.Event) {
	h.calls <- "pleg " + string(e.Type)
}
func (h *blockingHandler) HandleProbeUpdate(_ context.Context, u prober.Update) {
	h.calls <- "probe " + string(u.PodUID)
}
func (h *blockingHandler) HandleSyncTick(context.Context)     { h.calls <- "sync" }
func (h *blockingHandler) HandleHousekeeping(context.Context) { h.calls <- "housekeeping" }

type orphanDirs struct {
	noRuntime
	cleaned chan map[types.UID]bool
}

func (o orphanDirs) CleanupOrphanedPodDirs(keep map[types.UID]bool) { o.cleaned <- keep }

// Housekeeping starts a background pass tearing down the volumes of pods
// not kept (which the runtime leaves alone while they remain) and cleans
// the orphaned pod directories, both with the pods to keep.
func TestHousekeepingCleansVolumesAndPodDirs(t *testing.T) {
	cleaned, dirs := make(chan map[string]bool, 1), make(chan map[types.UID]bool, 1)
	pods := podmanager.NewManager()
	pods.AddOrUpdate(mkPod("uid-known", "known", nil))
	d := NewDispatcher(DispatcherConfig{
		Pods: pods, Workers: &fakeWorkers{states: map[types.UID]podworkers.PodState{}}, Runtime: orphanDirs{cleaned: dirs},
		SourcesReady:      func() bool { return true },
		CleanupPodVolumes: func(_ context.Context, keep map[string]bool) error { cleaned <- keep; return nil },
	})
	d.HandleHousekeeping(context.Background())
	if keep := <-dirs; !keep["uid-known"] || keep["uid-vol"] {
		t.Errorf("pod directory cleanup keeps %v", keep)
	}
	if keep := <-cleaned; !keep["uid-known"] || keep["uid-vol"] {
		t.Errorf("volume cleanup keeps %v", keep)
	}
}
