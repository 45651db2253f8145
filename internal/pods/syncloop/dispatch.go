package syncloop

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podstatus"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// Workers is what the dispatcher needs of the pod workers.
type Workers interface {
	UpdatePod(u podworkers.Update)
	Sync(uid types.UID) bool
	SyncDue()
	States() map[types.UID]podworkers.PodState
	Forget(uid types.UID) bool
}

// Runtime is what housekeeping needs of the runtime manager.
type Runtime interface {
	GetPods(ctx context.Context, all bool) ([]*kuberuntime.RunningPod, error)
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kuberuntime.PodStatus, error)
	KillPod(ctx context.Context, pod *v1.Pod, st *kuberuntime.PodStatus, gracePeriod *int64) error
	RemovePod(ctx context.Context, st *kuberuntime.PodStatus) error
	CleanupOrphanedPodDirs(keep map[types.UID]bool)
}

var (
	_ Workers = (*podworkers.PodWorkers)(nil)
	_ Runtime = (*kuberuntime.Manager)(nil)
)

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	Pods    *podmanager.Manager // required
	Workers Workers             // required
	Runtime Runtime             // required
	// SourcesReady reports whether every source has been seen; orphans
	// are only cleaned up after that.
	SourcesReady func() bool
	// OnHousekeeping runs extra periodic work (back-off GC, ...); may be nil.
	OnHousekeeping func(ctx context.Context)
	// Mirrors handles mirror pods in cluster mode; nil in standalone mode.
	Mirrors MirrorHandler
	// Admit decides whether a new pod may run beside the active ones; nil
	// admits every pod.
	Admit func(pod *v1.Pod, active []*v1.Pod) (ok bool, reason, message string)
	// Reject records a pod that was not admitted (its status goes Failed).
	Reject func(pod *v1.Pod, reason, message string)
	// StatusChanged asks for a pod's status to be written again (a new
	// mirror pod needs its static pod's status at once); may be nil.
	StatusChanged func(uid types.UID)
	// CleanupPodCgroups removes the pod cgroups of UIDs not in keep (pods
	// the kubelet knows or the runtime has); may be nil.
	CleanupPodCgroups func(keep map[types.UID]bool)
	// UpdateQOS sizes the QoS cgroups for the active pods: called when a
	// pod is admitted (before its worker makes its cgroup) and at each
	// housekeeping; may be nil.
	UpdateQOS func(active []*v1.Pod)
	// CleanupPodVolumes tears down the volumes of pod directories whose UID
	// is not in keep (pods deleted while the kubelet was down); it runs in
	// the background, one pass at a time, before their directories can go.
	// May be nil.
	CleanupPodVolumes func(ctx context.Context, keep map[string]bool) error
	// Allocations admits new pods with the resources allocated to them
	// and handles in-place resizes (a spec whose resources changed); nil
	// admits with Admit and resizes nothing.
	Allocations Allocations
	// ForgetEvents drops what the event correlator holds about a pod whose
	// worker housekeeping forgets (events.Broadcaster.Forget), so that a
	// kubelet churning pods does not keep 4096 gone pods' event records;
	// may be nil.
	ForgetEvents func(uid types.UID)
	// Metrics receives kubelet_desired_pods, kubelet_active_pods,
	// kubelet_working_pods and kubelet_restarted_pods_total; nil means a
	// private set nobody serves.
	Metrics *metrics.Metrics
}

// Allocations is what the dispatcher needs of the allocation manager.
type Allocations interface {
	AddPod(pod *v1.Pod, active []*v1.Pod) (ok bool, reason, message string)
	HandleUpdate(oldPod, newPod *v1.Pod)
	RemovePod(uid types.UID)
	RemoveOrphans(keep map[types.UID]bool)
	Apply(pod *v1.Pod) (*v1.Pod, bool)
}

var _ Allocations = (*allocation.Manager)(nil)

// MirrorHandler deletes mirror pods.
type MirrorHandler interface {
	Delete(ctx context.Context, mirror *v1.Pod) error
	DeleteOrphans(ctx context.Context)
}

// Dispatcher is the Handler that feeds the pod workers.
type Dispatcher struct {
	cfg DispatcherConfig
	// cleaning holds orphaned pods being stopped in the background, so the
	// loop never waits for a grace period.
	mu       sync.Mutex
	cleaning map[types.UID]bool
	// volumesBusy is set while a CleanupPodVolumes pass runs.
	volumesBusy bool
	// gauges are the pod count series, resolved at the first report so
	// that they show once housekeeping has run, as upstream's.
	gauges *podCountSeries
}

var _ Handler = (*Dispatcher)(nil)

// NewDispatcher returns a Dispatcher.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &Dispatcher{cfg: cfg, cleaning: map[types.UID]bool{}}
}

// HandlePodUpdate applies a config update to the desired pods and workers.
func (d *Dispatcher) HandlePodUpdate(ctx context.Context, u sources.PodUpdate) {
	for _, p := range u.Pods {
		if podutil.IsMirrorPod(p) {
			d.handleMirror(ctx, u.Op, p)
			continue
		}
		switch u.Op {
		case sources.ADD:
			_, known := d.cfg.Pods.Get(p.UID)
			if !known && !d.admit(p) {
				continue
			}
			d.cfg.Pods.AddOrUpdate(p)
			typ := podworkers.Sync
			if !known {
				d.updateQOS()
				// Added again with the UID of a pod still stopping: the
				// worker restarts it once it has terminated.
				typ = podworkers.Create
			}
			d.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: typ})
		case sources.UPDATE:
			old, known := d.cfg.Pods.Get(p.UID)
			if !known {
				continue // rejected at admission
			}
			d.cfg.Pods.AddOrUpdate(p)
			if d.cfg.Allocations != nil {
				// pods/resize: allocated now, deferred or infeasible.
				d.cfg.Allocations.HandleUpdate(old, p)
				d.updateQOS()
			}
			d.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Sync})
		case sources.RECONCILE:
			if _, known := d.cfg.Pods.Get(p.UID); known {
				d.cfg.Pods.AddOrUpdate(p)
				// Someone else changed a readiness gate's condition: the
				// worker needs the pod's new status to recompute Ready.
				if podstatus.NeedsReadinessSync(p) {
					d.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Sync})
				}
			}
		case sources.DELETE:
			// Graceful deletion: stop within the pod's deletion grace period;
			// the status manager deletes the object once it is terminated.
			if _, known := d.cfg.Pods.Get(p.UID); known {
				d.cfg.Pods.AddOrUpdate(p)
			}
			d.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Kill, GracePeriod: p.DeletionGracePeriodSeconds})
		case sources.REMOVE:
			d.cfg.Pods.Remove(p)
			d.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Kill, Removed: true})
			if d.cfg.Allocations != nil {
				d.cfg.Allocations.RemovePod(p.UID)
			}
		}
	}
}

// admit runs node admission for a pod the kubelet has not seen before.
func (d *Dispatcher) admit(p *v1.Pod) bool {
	var ok bool
	var reason, message string
	switch {
	case d.cfg.Allocations != nil:
		ok, reason, message = d.cfg.Allocations.AddPod(p, d.active())
	case d.cfg.Admit != nil:
		ok, reason, message = d.cfg.Admit(p, d.active())
	default:
		return true
	}
	if ok {
		return true
	}
	klog.InfoS("Pod rejected at admission", "pod", klog.KObj(p), "podUID", p.UID, "reason", reason, "message", message)
	if d.cfg.Reject != nil {
		d.cfg.Reject(p, reason, message)
	}
	return false
}

// active are the pods that hold node resources.
func (d *Dispatcher) active() []*v1.Pod {
	return podworkers.Active(d.cfg.Pods.List(), d.cfg.Workers.States())
}

// updateQOS sizes the QoS cgroups for the active pods' allocated resources.
func (d *Dispatcher) updateQOS() {
	if d.cfg.UpdateQOS == nil {
		return
	}
	active := d.active()
	if d.cfg.Allocations != nil {
		for i, p := range active {
			active[i], _ = d.cfg.Allocations.Apply(p)
		}
	}
	d.cfg.UpdateQOS(active)
}

// handleMirror keeps the mirror index current. A mirror pod being deleted
// (or gone) is removed now; the next sync of its static pod recreates it.
func (d *Dispatcher) handleMirror(ctx context.Context, op sources.Operation, mp *v1.Pod) {
	switch op {
	case sources.REMOVE:
		d.cfg.Pods.Remove(mp)
	default:
		d.cfg.Pods.AddOrUpdate(mp)
	}
	if op == sources.DELETE && d.cfg.Mirrors != nil {
		if err := d.cfg.Mirrors.Delete(ctx, mp); err != nil {
			klog.ErrorS(err, "Cannot delete mirror pod", "pod", klog.KObj(mp))
		}
	}
	static, ok := d.cfg.Pods.GetByFullName(mp.Namespace, mp.Name)
	if !ok {
		return
	}
	switch op {
	case sources.REMOVE, sources.DELETE:
		d.cfg.Workers.Sync(static.UID)
	case sources.ADD:
		if d.cfg.StatusChanged != nil {
			d.cfg.StatusChanged(static.UID)
		}
	}
}

// HandlePLEGEvent syncs the pod the event is about.
func (d *Dispatcher) HandlePLEGEvent(ctx context.Context, e pleg.Event) {
	if !d.cfg.Workers.Sync(e.ID) {
		klog.V(4).InfoS("PLEG event for a pod without a worker", "podUID", e.ID, "event", e.Type)
	}
}

// HandleProbeUpdate syncs the pod whose probe result changed (its
// readiness, or a restart after a liveness or startup failure).
func (d *Dispatcher) HandleProbeUpdate(ctx context.Context, u prober.Update) {
	if !d.cfg.Workers.Sync(u.PodUID) {
		klog.V(4).InfoS("Probe update for a pod without a worker", "podUID", u.PodUID, "container", u.ContainerName)
	}
}

// HandleSyncTick syncs pods whose resync or back-off time has come.
func (d *Dispatcher) HandleSyncTick(ctx context.Context) { d.cfg.Workers.SyncDue() }

// HandleHousekeeping forgets finished workers, restarts pods added again
// with the UID of a pod that was stopping, stops pods the runtime runs
// that no source wants, removes their leftover directories and reports
// the pod counts.
func (d *Dispatcher) HandleHousekeeping(ctx context.Context) {
	if d.cfg.OnHousekeeping != nil {
		d.cfg.OnHousekeeping(ctx)
	}
	d.updateQOS()
	states := d.cfg.Workers.States()
	for uid, s := range states {
		if _, wanted := d.cfg.Pods.Get(uid); (!wanted || s.RestartRequested) && s.State == podworkers.Terminated && s.Cleaned {
			d.cfg.Workers.Forget(uid)
			if d.cfg.ForgetEvents != nil {
				d.cfg.ForgetEvents(uid)
			}
			delete(states, uid)
		}
	}
	if d.cfg.SourcesReady != nil && !d.cfg.SourcesReady() {
		return
	}
	if d.cfg.Mirrors != nil {
		d.cfg.Mirrors.DeleteOrphans(ctx)
	}
	running, err := d.cfg.Runtime.GetPods(ctx, true)
	if err != nil {
		klog.ErrorS(err, "Housekeeping: cannot list pods from the runtime")
		return
	}
	pods := d.cfg.Pods.List()
	restart := toRestart(pods, states)
	for _, p := range restart {
		klog.V(3).InfoS("Pod will be restarted: it was added again with the same UID while its old worker stopped", "pod", klog.KObj(p), "podUID", p.UID)
		d.cfg.Workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Create})
	}
	wanted := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		wanted[p.UID] = true
	}
	if d.cfg.Allocations != nil {
		d.cfg.Allocations.RemoveOrphans(wanted)
	}
	known := make(map[types.UID]bool, len(wanted)+len(states))
	for uid := range wanted {
		known[uid] = true
	}
	for uid := range states {
		known[uid] = true
	}
	for _, rp := range running {
		if known[rp.UID] {
			continue
		}
		d.mu.Lock()
		busy := d.cleaning[rp.UID]
		d.cleaning[rp.UID] = true
		d.mu.Unlock()
		if !busy {
			go d.cleanupOrphan(ctx, rp)
		}
	}
	d.mu.Lock()
	runtimeOnly := len(d.cleaning)
	d.mu.Unlock()
	d.reportCounts(countPods(pods, wanted, states, restart, runtimeOnly))
	onRuntime := map[types.UID]bool{}
	for _, rp := range running {
		onRuntime[rp.UID] = true
	}
	keep := map[types.UID]bool{}
	for uid := range known {
		keep[uid] = true
	}
	for uid := range onRuntime {
		keep[uid] = true
	}
	if d.cfg.CleanupPodCgroups != nil {
		d.cfg.CleanupPodCgroups(keep)
	}
	d.cleanupVolumes(ctx, keep)
	d.cfg.Runtime.CleanupOrphanedPodDirs(keep)
}

// cleanupVolumes starts a background pass tearing down the volumes of pods
// not in keep, unless one is still running.
func (d *Dispatcher) cleanupVolumes(ctx context.Context, keep map[types.UID]bool) {
	if d.cfg.CleanupPodVolumes == nil {
		return
	}
	d.mu.Lock()
	busy := d.volumesBusy
	d.volumesBusy = true
	d.mu.Unlock()
	if busy {
		return
	}
	ids := make(map[string]bool, len(keep))
	for uid := range keep {
		ids[string(uid)] = true
	}
	go func() {
		defer func() {
			d.mu.Lock()
			d.volumesBusy = false
			d.mu.Unlock()
		}()
		if err := d.cfg.CleanupPodVolumes(ctx, ids); err != nil {
			klog.ErrorS(err, "Housekeeping: cannot tear down the volumes of orphaned pods yet")
		}
	}()
}

// cleanupOrphan stops and removes a pod no source wants (for example one
// whose manifest was deleted while the kubelet was down).
func (d *Dispatcher) cleanupOrphan(ctx context.Context, rp *kuberuntime.RunningPod) {
	defer func() {
		d.mu.Lock()
		delete(d.cleaning, rp.UID)
		d.mu.Unlock()
	}()
	klog.InfoS("Cleaning up orphaned pod", "pod", klog.KRef(rp.Namespace, rp.Name), "podUID", rp.UID)
	st, err := d.cfg.Runtime.GetPodStatus(ctx, rp.UID, rp.Name, rp.Namespace)
	if err != nil {
		klog.ErrorS(err, "Housekeeping: cannot get status of orphaned pod", "podUID", rp.UID)
		return
	}
	if err := d.cfg.Runtime.KillPod(ctx, nil, st, nil); err != nil {
		klog.ErrorS(err, "Housekeeping: cannot kill orphaned pod", "podUID", rp.UID)
		return
	}
	if err := d.cfg.Runtime.RemovePod(ctx, st); err != nil {
		klog.ErrorS(err, "Housekeeping: cannot remove orphaned pod", "podUID", rp.UID)
	}
}
