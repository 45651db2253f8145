package podworkers

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

// State of a pod worker.
type State int

const (
	Syncing State = iota
	Terminating
	Terminated
)

func (s State) String() string {
	return [...]string{"syncing", "terminating", "terminated"}[s]
}

// UpdateType says what an update asks for.
type UpdateType int

const (
	// Sync asks the pod to run as its spec says.
	Sync UpdateType = iota
	// Kill asks the pod to stop; Removed says it is gone from its source.
	Kill
	// Create is a Sync for a pod its source has just added (upstream's
	// SyncPodCreate). When the UID's worker is already terminating or
	// terminated (a static pod removed and added back with the same UID),
	// the pod is marked to restart: housekeeping forgets the finished
	// worker and starts it again (RestartRequested).
	Create
)

// Update is one request for a pod.
type Update struct {
	Pod  *v1.Pod
	Type UpdateType
	// GracePeriod overrides the pod's, for Kill.
	GracePeriod *int64
	// Removed marks a pod deleted from its source: after it terminated
	// its containers and files are removed too.
	Removed bool
	// Terminated, for Kill, is closed once the pod's containers are all
	// stopped for good: at once when the pod has no worker or is already
	// terminated (upstream's KillPodOptions.CompletedCh).
	Terminated chan<- struct{}
}

// Outcome of a sync.
type Outcome struct {
	// Terminal: the pod reached Succeeded or Failed and must stop.
	Terminal bool
	// RequeueAfter asks for another sync after this long (back-off expiry).
	RequeueAfter time.Duration
}

// Syncer does the work; it is called from one goroutine per pod.
type Syncer interface {
	SyncPod(ctx context.Context, pod *v1.Pod) (Outcome, error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64) error
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, removed bool) error
}

// Config configures PodWorkers.
type Config struct {
	Syncer Syncer      // required
	Clock  clock.Clock // required
	// ResyncInterval is how often a healthy pod is synced (syncFrequency).
	ResyncInterval time.Duration
	// BackOffPeriod is the retry delay after a failed sync.
	BackOffPeriod time.Duration
	// OnTerminated, when set, is called once a pod's containers are all
	// stopped for good (for example to finish its deletion in the API).
	OnTerminated func(pod *v1.Pod)
	// Metrics receives kubelet_pod_worker_duration_seconds; nil means a
	// private set nobody serves.
	Metrics *metrics.Metrics
}

type worker struct {
	uid      types.UID
	fullName string
	state    State
	pod      *v1.Pod
	pending  *Update
	kill     *Update // sticky once asked
	// cancelTerm cancels the termination in flight, so that a Kill with a
	// shorter grace period takes effect at once (as upstream's pod workers
	// do); nil when none runs.
	cancelTerm context.CancelFunc
	termGrace  *int64
	// cancelSync cancels the SyncPod in flight, so that a Kill does not
	// wait for a start it makes pointless (image pull, sandbox, volume
	// set-up), as upstream's pod workers; nil when none runs.
	cancelSync context.CancelFunc
	removed    bool
	cleaned    bool // terminated-cleanup done (with removal if removed)
	synced     bool // SyncPod ran at least once
	// restart: a Create arrived after the pod was asked to stop.
	restart bool
	// waiters are closed when the worker reaches Terminated.
	waiters  []chan<- struct{}
	wake     chan struct{}
	stop     chan struct{}
	nextSync time.Time
	done     chan struct{}
}

// PodWorkers runs one goroutine per pod.
type PodWorkers struct {
	cfg     Config
	ctx     context.Context
	mu      sync.Mutex
	workers map[types.UID]*worker
	// holders maps a full name to the UID allowed to run under it.
	holders map[string]types.UID
}

// New returns PodWorkers whose goroutines end with ctx.
func New(ctx context.Context, cfg Config) *PodWorkers {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &PodWorkers{cfg: cfg, ctx: ctx, workers: map[types.UID]*worker{}, holders: map[string]types.UID{}}
}

func fullName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// UpdatePod hands an update to the pod's worker, starting one if needed.
// It never blocks on the sync itself.
func (p *PodWorkers) UpdatePod(u Update) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.workers[u.Pod.UID]
	if !ok {
		if u.Type == Kill && !u.Removed {
			closeIfSet(u.Terminated)
			return // never started: nothing to stop
		}
		w = &worker{uid: u.Pod.UID, fullName: fullName(u.Pod), pod: u.Pod, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		p.workers[u.Pod.UID] = w
		go p.run(w)
	}
	if u.Type == Kill {
		if u.Pod != nil && w.state != Terminated {
			// The newest pod (deletion timestamp, grace period) is what the
			// termination and its status are computed from.
			w.pod = u.Pod
			w.pending = nil
		}
		if w.kill == nil || u.Removed || (u.GracePeriod != nil && (w.kill.GracePeriod == nil || *u.GracePeriod < *w.kill.GracePeriod)) {
			cp := u
			cp.Terminated = nil // kept in waiters
			if w.kill != nil && cp.GracePeriod == nil {
				cp.GracePeriod = w.kill.GracePeriod
			}
			w.kill = &cp
		}
		if w.cancelSync != nil {
			klog.V(4).InfoS("Pod is to stop: cancelling its sync in flight", "pod", klog.KObj(w.pod), "podUID", w.uid)
			w.cancelSync()
			w.cancelSync = nil
		}
		if w.cancelTerm != nil && shorter(w.kill.GracePeriod, w.termGrace) {
			klog.V(2).InfoS("Grace period shortened while terminating: restarting the termination", "pod", klog.KObj(w.pod),
				"gracePeriod", *w.kill.GracePeriod)
			w.cancelTerm()
			w.cancelTerm = nil
		}
		if u.Removed {
			w.removed = true
			w.cleaned = false
		}
		if u.Terminated != nil {
			if w.state == Terminated {
				close(u.Terminated)
			} else {
				w.waiters = append(w.waiters, u.Terminated)
			}
		}
	} else if u.Type == Create && w.kill != nil {
		if !w.restart {
			klog.V(4).InfoS("Pod is stopping but was added again with the same UID: it restarts once terminated", "pod", klog.KObj(u.Pod), "podUID", w.uid)
		}
		w.restart = true
	} else if w.state == Syncing {
		cp := u
		w.pending = &cp
	}
	w.signal()
}

// shorter reports whether grace a is shorter than b (nil: the pod's own).
func shorter(a, b *int64) bool {
	return a != nil && (b == nil || *a < *b)
}

func closeIfSet(ch chan<- struct{}) {
	if ch != nil {
		close(ch)
	}
}

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// blocked reports whether another pod that is not yet terminated holds w's
// full name; if not, w takes the name. Called with p.mu held.
func (p *PodWorkers) blocked(w *worker) bool {
	if h, ok := p.holders[w.fullName]; ok && h != w.uid {
		if o, ok := p.workers[h]; ok && o.state != Terminated {
			return true
		}
	}
	p.holders[w.fullName] = w.uid
	return false
}

func (p *PodWorkers) run(w *worker) {
	defer close(w.done)
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-w.stop:
			return
		case <-w.wake:
		}
		if !p.step(w) {
			return
		}
	}
}

// step does one unit of work; false ends the goroutine.
func (p *PodWorkers) step(w *worker) bool {
	p.mu.Lock()
	state := w.state
	op := "sync"
	if w.pending != nil {
		w.pod = w.pending.Pod
		w.pending = nil
		op = "update"
	}
	if !w.synced {
		op = "create"
	}
	pod := w.pod
	kill := w.kill
	removed := w.removed
	if state == Syncing && kill != nil {
		state, w.state = Terminating, Terminating
	}
	if state == Syncing && p.blocked(w) {
		p.mu.Unlock()
		klog.V(3).InfoS("Pod waits for an older pod of the same name to terminate", "pod", klog.KObj(pod), "podUID", pod.UID)
		return true
	}
	if state == Syncing && w.nextSync.IsZero() {
		w.nextSync = p.cfg.Clock.Now()
	}
	if state == Terminated && w.cleaned {
		p.mu.Unlock()
		return true
	}
	p.mu.Unlock()

	ctx := p.ctx
	start := p.cfg.Clock.Now()
	observe := func(op string) {
		p.cfg.Metrics.PodWorkerDuration.WithLabelValues(op).Observe(p.cfg.Clock.Since(start).Seconds())
	}
	switch state {
	case Syncing:
		sctx, cancel := context.WithCancel(ctx)
		p.mu.Lock()
		w.cancelSync = cancel
		p.mu.Unlock()
		out, err := p.cfg.Syncer.SyncPod(sctx, pod)
		observe(op)
		cancelled := sctx.Err() != nil && ctx.Err() == nil
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		w.cancelSync = nil
		w.synced = true
		switch {
		case cancelled && w.kill != nil:
			// Cut short by a Kill: the worker is woken already and
			// terminates the pod next.
			klog.V(4).InfoS("Pod sync cancelled: the pod is to stop", "pod", klog.KObj(pod), "podUID", pod.UID, "err", err)
		case err != nil:
			klog.ErrorS(err, "Error syncing pod, skipping", "pod", klog.KObj(pod), "podUID", pod.UID)
			w.nextSync = p.cfg.Clock.Now().Add(wait.Jitter(p.cfg.BackOffPeriod, 0.5))
			if out.RequeueAfter > 0 {
				w.nextSync = p.cfg.Clock.Now().Add(out.RequeueAfter)
			}
		case out.Terminal:
			if w.kill == nil {
				w.kill = &Update{Pod: pod, Type: Kill}
			}
			w.signal()
		case out.RequeueAfter > 0:
			w.nextSync = p.cfg.Clock.Now().Add(out.RequeueAfter)
		default:
			w.nextSync = p.cfg.Clock.Now().Add(wait.Jitter(p.cfg.ResyncInterval, 0.5))
		}
	case Terminating:
		tctx, cancel := context.WithCancel(ctx)
		p.mu.Lock()
		w.cancelTerm, w.termGrace = cancel, kill.GracePeriod
		p.mu.Unlock()
		err := p.cfg.Syncer.SyncTerminatingPod(tctx, pod, kill.GracePeriod)
		observe("kill")
		interrupted := tctx.Err() != nil && ctx.Err() == nil
		cancel()
		p.mu.Lock()
		w.cancelTerm, w.termGrace = nil, nil
		p.mu.Unlock()
		if interrupted {
			// A shorter grace period arrived: terminate again with it now.
			w.signal()
			return true
		}
		if err != nil {
			klog.ErrorS(err, "Error terminating pod, will retry", "pod", klog.KObj(pod), "podUID", pod.UID)
			p.mu.Lock()
			w.nextSync = p.cfg.Clock.Now().Add(p.cfg.BackOffPeriod)
			p.mu.Unlock()
			return true
		}
		p.mu.Lock()
		w.state = Terminated
		for _, ch := range w.waiters {
			close(ch)
		}
		w.waiters = nil
		w.signal()
		if p.cfg.OnTerminated != nil {
			go p.cfg.OnTerminated(pod)
		}
		// Pods waiting for this name may go now.
		for _, o := range p.workers {
			if o != w && o.fullName == w.fullName {
				o.signal()
			}
		}
		p.mu.Unlock()
	case Terminated:
		err := p.cfg.Syncer.SyncTerminatedPod(ctx, pod, removed)
		observe("terminated")
		if err != nil {
			klog.ErrorS(err, "Error cleaning up terminated pod, will retry", "pod", klog.KObj(pod), "podUID", pod.UID)
			p.mu.Lock()
			w.nextSync = p.cfg.Clock.Now().Add(p.cfg.BackOffPeriod)
			p.mu.Unlock()
			return true
		}
		p.mu.Lock()
		w.cleaned = w.removed == removed
		if !w.cleaned {
			w.signal()
		}
		p.mu.Unlock()
	}
	return true
}

// SyncDue wakes every syncing or unfinished worker whose next sync is due
// (periodic resync, back-off expiry, retries).
func (p *PodWorkers) SyncDue() {
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.workers {
		if w.state == Terminated && w.cleaned {
			continue
		}
		if !w.nextSync.IsZero() && !now.Before(w.nextSync) {
			w.nextSync = now.Add(p.cfg.ResyncInterval) // until the sync says otherwise
			w.signal()
		}
	}
}

// Sync asks for an immediate sync of uid (a runtime event) if it has a worker.
func (p *PodWorkers) Sync(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.workers[uid]
	if ok {
		w.signal()
	}
	return ok
}

// SyncIf asks for an immediate sync of every pod that matches (for
// example the static pods once the Node is registered).
func (p *PodWorkers) SyncIf(match func(*v1.Pod) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.workers {
		if match(w.pod) {
			w.signal()
		}
	}
}

// IsTerminated reports whether the pod's containers are all stopped for
// good (the status manager may then finish its deletion in the API).
func (p *PodWorkers) IsTerminated(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.workers[uid]
	return ok && w.state == Terminated
}

// Active returns the pods that hold node resources, as upstream's
// filterOutInactivePods: every pod whose worker still syncs it, or that
// has no worker yet. Terminating and terminated pods are left out. Pure.
func Active(pods []*v1.Pod, states map[types.UID]PodState) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if s, ok := states[p.UID]; ok && s.State != Syncing {
			continue
		}
		out = append(out, p)
	}
	return out
}

// PodState is one worker's state for housekeeping and readers.
type PodState struct {
	Pod     *v1.Pod
	State   State
	Removed bool
	Cleaned bool
	// RestartRequested: the pod was added again with the same UID while
	// it stopped; once Cleaned its worker is to be forgotten and the pod
	// started afresh.
	RestartRequested bool
}

// States lists every worker's state.
func (p *PodWorkers) States() map[types.UID]PodState {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[types.UID]PodState, len(p.workers))
	for uid, w := range p.workers {
		out[uid] = PodState{Pod: w.pod, State: w.state, Removed: w.removed, Cleaned: w.cleaned, RestartRequested: w.restart}
	}
	return out
}

// Forget drops the worker of a pod that has terminated and been cleaned
// up; a later update with the same UID starts afresh. It reports whether
// the worker was dropped.
func (p *PodWorkers) Forget(uid types.UID) bool {
	p.mu.Lock()
	w, ok := p.workers[uid]
	if !ok || w.state != Terminated || !w.cleaned {
		p.mu.Unlock()
		return false
	}
	delete(p.workers, uid)
	if p.holders[w.fullName] == uid {
		delete(p.holders, w.fullName)
	}
	close(w.stop)
	p.mu.Unlock()
	return true
}

// Wait blocks until every worker goroutine has ended (after ctx ends).
func (p *PodWorkers) Wait() {
	p.mu.Lock()
	var dones []chan struct{}
	for _, w := range p.workers {
		dones = append(dones, w.done)
	}
	p.mu.Unlock()
	for _, d := range dones {
		<-d
	}
}
