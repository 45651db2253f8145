package podsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podstatus"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// Runtime is the part of the runtime manager a sync uses.
type Runtime interface {
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kuberuntime.PodStatus, error)
	SyncPod(ctx context.Context, in kuberuntime.Inputs) kuberuntime.SyncResult
	KillPod(ctx context.Context, pod *v1.Pod, st *kuberuntime.PodStatus, gracePeriod *int64) error
	RemovePod(ctx context.Context, st *kuberuntime.PodStatus) error
	PruneContainers(ctx context.Context, st *kuberuntime.PodStatus, keep int)
	// ResizeInProgress reports whether what runs differs from what the
	// pod was allocated; Actuated is what was applied.
	ResizeInProgress(pod *v1.Pod, st *kuberuntime.PodStatus) bool
	Actuated(pod *v1.Pod) *allocation.PodResources
}

// Allocations is what a sync needs of the allocation manager: the
// resources each pod was allocated (a pod syncs with them, not with a
// resize not yet accepted) and its resize conditions.
type Allocations interface {
	Apply(pod *v1.Pod) (*v1.Pod, bool)
	Conditions(uid types.UID) []v1.PodCondition
	SetInProgress(uid types.UID, reason, message string, generation int64) (int64, bool)
	ClearInProgress(uid types.UID) (int64, bool)
}

var _ Allocations = (*allocation.Records)(nil)

var _ Runtime = (*kuberuntime.Manager)(nil)

// Config configures a Syncer.
type Config struct {
	Runtime Runtime                // required
	Status  *statusmanager.Manager // required
	Clock   clock.Clock            // required
	// HostIPs are the node's addresses (status.hostIPs).
	HostIPs []string
	// RuntimeName prefixes container IDs in statuses.
	RuntimeName string
	// MaxDeadPerContainer dead instances kept per container (1 upstream).
	MaxDeadPerContainer int
	// Mirrors keeps static pods' mirror pods in the API server; nil in
	// standalone mode.
	Mirrors MirrorEnsurer
	// Volumes sets up a pod's volumes before its containers start and
	// rewrites configMap/secret/downwardAPI contents of running pods at
	// each sync so updates reach them; may be nil.
	Volumes Volumes
	// Probes runs liveness, readiness and startup probes; may be nil.
	Probes Probes
	// Recorder receives the DeadlineExceeded event; may be nil.
	Recorder events.Recorder
	// Metrics receives the pod start durations; nil means a private set
	// nobody serves.
	Metrics *metrics.Metrics
	// Reported returns the status the API server holds for pod (the pod's
	// own, or a static pod's mirror pod's) and that object's UID; false
	// when there is none to know (standalone mode, or a static pod whose
	// mirror pod is not known yet). May be nil (standalone).
	Reported func(pod *v1.Pod) (status v1.PodStatus, object types.UID, ok bool)
	// Allocations gives each pod's allocated resources and resize
	// conditions; nil syncs pods as their specs say (no in-place resize).
	Allocations Allocations
}

// ActiveDeadline reports whether pod has run past activeDeadlineSeconds
// since it started, and otherwise how long it has left (zero when it has
// no deadline). It is pure.
func ActiveDeadline(pod *v1.Pod, started *metav1.Time, now time.Time) (exceeded bool, left time.Duration) {
	if pod.Spec.ActiveDeadlineSeconds == nil || started == nil {
		return false, 0
	}
	left = started.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// Probes is what a sync needs of the prober: it tells it which container
// instances run, and reads readiness, startup and liveness back.
type Probes interface {
	AddPod(pod *v1.Pod)
	RemovePod(uid types.UID)
	ContainerStarted(pod *v1.Pod, containerName, containerID string, startedAt time.Time, prior prober.Prior)
	ContainerStopped(uid types.UID, containerName string)
	Result(uid types.UID, container string, t prober.ProbeType) prober.Result
	Ready(uid types.UID, container string) bool
	Started(uid types.UID, container string) bool
	LivenessGracePeriod(uid types.UID, container string) int64
}

var _ Probes = (*prober.Manager)(nil)

// Volumes is what a sync needs of the volume manager.
type Volumes interface {
	// SetUpPod sets up the volumes the pod's containers use.
	SetUpPod(ctx context.Context, pod *v1.Pod) volume.SetUpResult
	// Refresh rewrites the contents of volumes already set up.
	Refresh(ctx context.Context, pod *v1.Pod) error
	// TearDown unmounts every volume of the pod once its containers are
	// stopped: CSI unpublish (and unstage), local volumes, subPath binds
	// and the tmpfs of memory-backed volumes (secrets, tokens).
	TearDown(uid string) error
}

var _ Volumes = (*volume.Manager)(nil)

// Retry delays for a pod whose volumes cannot be set up yet, as upstream's
// volume operations back off (500ms doubling to 2m2s).
const (
	mountRetryInitial = 500 * time.Millisecond
	mountRetryMax     = 2*time.Minute + 2*time.Second
)

// MirrorEnsurer creates or replaces a static pod's mirror pod.
type MirrorEnsurer interface {
	Ensure(ctx context.Context, static *v1.Pod) error
}

// mirrorRetry is how soon a sync is retried when the mirror pod could not
// be written (the API server is away, or the Node is not registered yet).
const mirrorRetry = 2 * time.Second

// Syncer implements podworkers.Syncer.
type Syncer struct {
	cfg      Config
	mu       sync.Mutex
	failures map[types.UID]map[string]kuberuntime.ContainerFailure
	started  map[types.UID]bool   // pods whose start duration was recorded
	mounts   *flowcontrol.Backoff // per pod UID, while volumes fail to set up
	// mountFailed is when each pod's volumes last failed (and were reported).
	mountFailed map[types.UID]time.Time
}

var _ podworkers.Syncer = (*Syncer)(nil)

// New returns a Syncer.
func New(cfg Config) *Syncer {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &Syncer{cfg: cfg, failures: map[types.UID]map[string]kuberuntime.ContainerFailure{}, started: map[types.UID]bool{},
		mounts: backoff.New(mountRetryInitial, mountRetryMax, cfg.Clock), mountFailed: map[types.UID]time.Time{}}
}

// Baseline picks the status a pod's new status builds on (start time,
// transition times, readiness the prober starts from) and the API object
// the new status will be built on, as upstream's status manager takes the
// cached status, else the mirror pod's, else the pod's own: the status last
// stored when it was built on the same API object; else what the API holds
// (after a kubelet restart, or for a static pod whose mirror pod just became
// known) unless that is still empty (a mirror pod just created). It is pure.
func Baseline(stored statusmanager.Stored, haveStored bool, api v1.PodStatus, object types.UID, haveAPI bool) (v1.PodStatus, types.UID) {
	switch {
	case !haveAPI:
		object = ""
		if haveStored {
			return stored.Status, object
		}
		return v1.PodStatus{}, object
	case haveStored && (stored.Basis == object || api.StartTime == nil):
		return stored.Status, object
	default:
		return api, object
	}
}

// baseline is Baseline for pod now.
func (s *Syncer) baseline(pod *v1.Pod) (v1.PodStatus, types.UID) {
	stored, haveStored := s.cfg.Status.Lookup(pod.UID)
	var api v1.PodStatus
	var object types.UID
	var haveAPI bool
	if s.cfg.Reported != nil {
		api, object, haveAPI = s.cfg.Reported(pod)
	}
	return Baseline(stored, haveStored, api, object, haveAPI)
}

// PriorOf is what base (a status last reported) says about the container
// instance id of container name: ready, started. Only a report of that very
// instance counts. It is pure.
func PriorOf(base v1.PodStatus, name, id string) prober.Prior {
	for _, list := range [][]v1.ContainerStatus{base.ContainerStatuses, base.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name != name || cs.ContainerID == "" || podutil.RuntimeContainerID(cs.ContainerID) != id || cs.State.Running == nil {
				continue
			}
			return prober.Prior{Ready: cs.Ready, Started: cs.Started != nil && *cs.Started}
		}
	}
	return prober.Prior{}
}

func (s *Syncer) publish(pod *v1.Pod, st *kuberuntime.PodStatus) v1.PodStatus {
	return s.publishWith(pod, st, false)
}

func (s *Syncer) publishWith(pod *v1.Pod, st *kuberuntime.PodStatus, terminal bool) v1.PodStatus {
	old, basis := s.baseline(pod)
	var resizeConds []v1.PodCondition
	if s.cfg.Allocations != nil {
		if !terminal {
			s.resizeProgress(pod, st)
		}
		resizeConds = s.cfg.Allocations.Conditions(pod.UID)
	}
	s.mu.Lock()
	failures := make(map[string]kuberuntime.ContainerFailure, len(s.failures[pod.UID]))
	for k, v := range s.failures[pod.UID] {
		failures[k] = v
	}
	s.mu.Unlock()
	in := podstatus.Input{
		Pod: pod, Runtime: st, Failures: failures, Old: old, HostIPs: s.cfg.HostIPs,
		RuntimeName: s.cfg.RuntimeName, Now: s.cfg.Clock.Now(), Terminal: terminal,
		Actuated: s.cfg.Runtime.Actuated(pod), ResizeConditions: resizeConds,
	}
	if s.cfg.Probes != nil {
		in.Ready = func(name string) bool { return s.cfg.Probes.Ready(pod.UID, name) }
		in.Started = func(name string) bool { return s.cfg.Probes.Started(pod.UID, name) }
	}
	ps := podstatus.Generate(in)
	s.cfg.Status.SetBuiltOn(pod, ps, basis)
	s.observeStart(pod, ps)
	return ps
}

// resizeProgress sets PodResizeInProgress while what runs differs from
// what the pod was allocated, and clears it (with a ResizeCompleted event)
// once they agree, as upstream's SyncPod.
func (s *Syncer) resizeProgress(pod *v1.Pod, st *kuberuntime.PodStatus) {
	if s.cfg.Runtime.ResizeInProgress(pod, st) {
		s.cfg.Allocations.SetInProgress(pod.UID, "", "", pod.Generation)
		return
	}
	if gen, cleared := s.cfg.Allocations.ClearInProgress(pod.UID); cleared && s.cfg.Recorder != nil {
		s.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.ResizeCompleted, "%s", allocation.Message(pod, gen, "", "Pod resize completed"))
	}
}

// observeStart records the pod start duration the first time a pod runs.
func (s *Syncer) observeStart(pod *v1.Pod, ps v1.PodStatus) {
	if ps.Phase != v1.PodRunning {
		return
	}
	s.mu.Lock()
	if s.started[pod.UID] {
		s.mu.Unlock()
		return
	}
	s.started[pod.UID] = true
	s.mu.Unlock()
	now := s.cfg.Clock.Now()
	if seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[podutil.ConfigFirstSeenAnnotationKey]); err == nil {
		s.cfg.Metrics.PodStartDuration.Observe(now.Sub(seen).Seconds())
	}
	if !pod.CreationTimestamp.IsZero() {
		s.cfg.Metrics.PodStartSLIDuration.WithLabelValues().Observe(now.Sub(pod.CreationTimestamp.Time).Seconds())
	}
}

func (s *Syncer) record(uid types.UID, res kuberuntime.SyncResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failures[uid]
	if f == nil {
		f = map[string]kuberuntime.ContainerFailure{}
		s.failures[uid] = f
	}
	for _, name := range res.Started {
		delete(f, name)
	}
	for name, fail := range res.Failures {
		f[name] = fail
	}
}

// SyncPod publishes the pod's status and makes the runtime match its spec,
// with the resources allocated to it.
func (s *Syncer) SyncPod(ctx context.Context, pod *v1.Pod) (podworkers.Outcome, error) {
	if s.cfg.Allocations != nil {
		pod, _ = s.cfg.Allocations.Apply(pod)
	}
	st, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return podworkers.Outcome{}, fmt.Errorf("get runtime status of pod %s: %w", klog.KObj(pod), err)
	}
	// The prober learns the running instances (and, after a restart, what
	// was last reported about them) before the status is generated: a
	// status must never say less than what the probes already know.
	unhealthy, startupPending := s.probe(pod, st)
	ps := s.publish(pod, st)
	if ps.Phase == v1.PodSucceeded || ps.Phase == v1.PodFailed {
		return podworkers.Outcome{Terminal: true}, nil
	}
	exceeded, deadlineLeft := ActiveDeadline(pod, ps.StartTime, s.cfg.Clock.Now())
	if exceeded {
		const msg = "Pod was active on the node longer than the specified deadline"
		ps.Phase, ps.Reason, ps.Message = v1.PodFailed, "DeadlineExceeded", msg
		s.cfg.Status.Set(pod, ps)
		if s.cfg.Recorder != nil {
			s.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.DeadlineExceeded, msg)
		}
		return podworkers.Outcome{Terminal: true}, nil
	}
	mirrorFailed := false
	if s.cfg.Mirrors != nil {
		if err := s.cfg.Mirrors.Ensure(ctx, pod); err != nil {
			klog.V(2).InfoS("Cannot write the mirror pod yet, will retry", "pod", klog.KObj(pod), "err", err)
			mirrorFailed = true
		}
	}
	if s.cfg.Volumes != nil && st.Running() {
		if err := s.cfg.Volumes.Refresh(ctx, pod); err != nil {
			klog.V(2).InfoS("Cannot refresh the pod's volumes", "pod", klog.KObj(pod), "err", err)
		}
	}
	if wait, ok := s.setUpVolumes(ctx, pod); !ok {
		// As upstream: no sandbox and no container before every volume is
		// set up; the pod stays Pending with its containers ContainerCreating.
		out := podworkers.Outcome{RequeueAfter: wait}
		if mirrorFailed && out.RequeueAfter > mirrorRetry {
			out.RequeueAfter = mirrorRetry
		}
		return out, nil
	}
	s.cfg.Runtime.PruneContainers(ctx, st, s.cfg.MaxDeadPerContainer)
	res := s.cfg.Runtime.SyncPod(ctx, kuberuntime.Inputs{Pod: pod, Status: st, Unhealthy: unhealthy, StartupPending: startupPending})
	s.record(pod.UID, res)
	if res.ResizeErr != nil && s.cfg.Allocations != nil {
		msg := res.ResizeErr.Error()
		if gen, changed := s.cfg.Allocations.SetInProgress(pod.UID, allocation.ReasonError, msg, pod.Generation); changed && s.cfg.Recorder != nil {
			s.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.ResizeError, "%s", allocation.Message(pod, gen, msg, "Pod resize error"))
		}
	}
	if res.Changed || len(res.Failures) > 0 {
		// Publish what the sync did now rather than at the next relist.
		if st2, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
			s.probe(pod, st2)
			if len(res.Started) > 0 {
				// A new instance replaced a dead one: keep the dead ones in bound now.
				s.cfg.Runtime.PruneContainers(ctx, st2, s.cfg.MaxDeadPerContainer)
			}
			ps = s.publish(pod, st2)
		}
	}
	out := podworkers.Outcome{RequeueAfter: res.RequeueAfter}
	if mirrorFailed && (out.RequeueAfter == 0 || out.RequeueAfter > mirrorRetry) {
		out.RequeueAfter = mirrorRetry
	}
	if deadlineLeft > 0 && (out.RequeueAfter == 0 || out.RequeueAfter > deadlineLeft) {
		out.RequeueAfter = deadlineLeft // wake up when the deadline passes
	}
	if res.Err == nil && (ps.Phase == v1.PodSucceeded || ps.Phase == v1.PodFailed) {
		out.Terminal = true
	}
	return out, res.Err
}

// setUpVolumes sets up the pod's volumes, emitting FailedMount for each one
// that fails. It reports whether all are set up and, if not, when to retry.
func (s *Syncer) setUpVolumes(ctx context.Context, pod *v1.Pod) (time.Duration, bool) {
	if s.cfg.Volumes == nil {
		return 0, true
	}
	key := string(pod.UID)
	res := s.cfg.Volumes.SetUpPod(ctx, pod)
	s.mu.Lock()
	last, failedBefore := s.mountFailed[pod.UID]
	if len(res.Unmounted) == 0 {
		delete(s.mountFailed, pod.UID)
		s.mu.Unlock()
		s.mounts.Reset(key)
		return 0, true
	}
	s.mu.Unlock()
	now := s.cfg.Clock.Now()
	if failedBefore {
		if left := backoff.Remaining(s.mounts, key, last); left > 0 {
			return left, false // this failure was reported already
		}
	}
	for _, f := range res.Failed {
		klog.V(2).InfoS("Volume set-up failed, the pod waits", "pod", klog.KObj(pod), "volume", f.Volume, "err", f.Err)
		if s.cfg.Recorder != nil {
			s.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedMount, "%s", f.Message())
		}
	}
	s.mounts.Next(key, now)
	s.mu.Lock()
	s.mountFailed[pod.UID] = now
	s.mu.Unlock()
	return s.mounts.Get(key), false
}

// probe tells the prober which container instances run now and returns
// the running containers whose liveness or startup probe failed, and the
// running restartable init containers that have not passed their startup
// probe yet (they hold back the containers after them).
func (s *Syncer) probe(pod *v1.Pod, st *kuberuntime.PodStatus) (map[string]kuberuntime.Unhealthy, map[string]bool) {
	if s.cfg.Probes == nil {
		return nil, nil
	}
	// Probes without a host go to the pod's IP, which only the runtime knows.
	withIP := pod
	ips := st.IPs
	if pod.Spec.HostNetwork {
		ips = s.cfg.HostIPs
	}
	if len(ips) > 0 && pod.Status.PodIP != ips[0] {
		withIP = pod.DeepCopy()
		withIP.Status.PodIP = ips[0]
		withIP.Status.PodIPs = nil
		for _, ip := range ips {
			withIP.Status.PodIPs = append(withIP.Status.PodIPs, v1.PodIP{IP: ip})
		}
	}
	s.cfg.Probes.AddPod(withIP)
	pod = withIP
	base, _ := s.baseline(pod)
	var unhealthy map[string]kuberuntime.Unhealthy
	var startupPending map[string]bool
	check := func(c *v1.Container) {
		cs := st.FindContainer(c.Name)
		if cs == nil {
			return
		}
		if cs.State != kuberuntime.StateRunning {
			s.cfg.Probes.ContainerStopped(pod.UID, c.Name)
			return
		}
		s.cfg.Probes.ContainerStarted(pod, c.Name, cs.ID, cs.StartedAt, PriorOf(base, c.Name, cs.ID))
		if c.StartupProbe != nil && !s.cfg.Probes.Started(pod.UID, c.Name) {
			if startupPending == nil {
				startupPending = map[string]bool{}
			}
			startupPending[c.Name] = true
		}
		kind := ""
		switch {
		case s.cfg.Probes.Result(pod.UID, c.Name, prober.Startup) == prober.Failure:
			kind = "startup"
		case s.cfg.Probes.Result(pod.UID, c.Name, prober.Liveness) == prober.Failure:
			kind = "liveness"
		default:
			return
		}
		grace := s.cfg.Probes.LivenessGracePeriod(pod.UID, c.Name)
		if unhealthy == nil {
			unhealthy = map[string]kuberuntime.Unhealthy{}
		}
		unhealthy[c.Name] = kuberuntime.Unhealthy{ContainerID: cs.ID, GracePeriod: &grace,
			Message: fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, kind)}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podutil.IsRestartableInitContainer(c) {
			check(c)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	return unhealthy, startupPending
}

// SyncTerminatingPod stops every container of the pod within the grace period.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64) error {
	if s.cfg.Probes != nil {
		s.cfg.Probes.RemovePod(pod.UID)
	}
	st, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("get runtime status of pod %s: %w", klog.KObj(pod), err)
	}
	if err := s.cfg.Runtime.KillPod(ctx, pod, st, gracePeriod); err != nil {
		return fmt.Errorf("kill pod %s: %w", klog.KObj(pod), err)
	}
	// As upstream, a terminated pod's volumes are unmounted (so they can be
	// detached, and its secrets leave memory) before the pod counts as
	// terminated and may be deleted.
	if s.cfg.Volumes != nil {
		if err := s.cfg.Volumes.TearDown(string(pod.UID)); err != nil {
			return fmt.Errorf("unmount volumes of pod %s: %w", klog.KObj(pod), err)
		}
	}
	if st2, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		s.publishWith(pod, st2, true)
	}
	klog.V(2).InfoS("Pod terminated", "pod", klog.KObj(pod), "podUID", pod.UID)
	return nil
}

// SyncTerminatedPod removes a deleted pod's containers, sandboxes and files.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, removed bool) error {
	if !removed {
		return nil
	}
	st, err := s.cfg.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("get runtime status of pod %s: %w", klog.KObj(pod), err)
	}
	if err := s.cfg.Runtime.RemovePod(ctx, st); err != nil {
		return err
	}
	s.cfg.Status.Delete(pod.UID)
	s.mu.Lock()
	delete(s.failures, pod.UID)
	delete(s.started, pod.UID)
	delete(s.mountFailed, pod.UID)
	s.mu.Unlock()
	s.mounts.Reset(string(pod.UID))
	klog.V(2).InfoS("Removed pod from the runtime", "pod", klog.KObj(pod), "podUID", pod.UID)
	return nil
}
