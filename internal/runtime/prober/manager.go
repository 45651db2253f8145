package prober

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

type key struct {
	uid       types.UID
	container string
	t         ProbeType
}

// slot is the state of one (container, probe type) worker.
type slot struct {
	probe       *v1.Probe
	container   *v1.Container
	result      Result
	containerID string
	gen         uint64
	// settled: a probe of this instance reached a verdict; until then the
	// result is a seed (the initial value or the instance's Prior).
	settled bool
	cancel  context.CancelFunc
	// trigger asks the armed worker to probe now (buffered, one pending).
	trigger chan struct{}
}

type podState struct {
	pod   *v1.Pod
	slots map[key]*slot
}

// updatesBuffer is how many result changes wait for the sync loop before
// more are dropped (as upstream's PLEG channel, the loop reads them at once).
const updatesBuffer = 1000

// Manager owns the probe workers of all pods on the node.
type Manager struct {
	cfg     Config
	clock   clock.WithTicker
	metrics *metrics.Metrics
	updates chan Update

	mu   sync.Mutex
	pods map[types.UID]*podState
	wg   sync.WaitGroup
}

// New returns a Manager; a nil Clock means the real clock.
func New(cfg Config) *Manager {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	m := cfg.Metrics
	if m == nil {
		m = metrics.New()
	}
	return &Manager{cfg: cfg, clock: clk, metrics: m, updates: make(chan Update, updatesBuffer), pods: map[types.UID]*podState{}}
}

// Updates receives every change of a probe result; the sync loop reads it
// and syncs the pod.
func (m *Manager) Updates() <-chan Update { return m.updates }

// probedContainers lists the containers that may carry probes: regular
// containers and restartable (sidecar) init containers.
func probedContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podutil.IsRestartableInitContainer(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

func probeOf(c *v1.Container, t ProbeType) *v1.Probe {
	switch t {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	default:
		return c.StartupProbe
	}
}

var allTypes = [...]ProbeType{Liveness, Readiness, Startup}

// AddPod registers pod's probes (one worker slot per container and probe
// type). Workers start probing once ContainerStarted reports an instance.
// Calling it again refreshes the stored pod (e.g. its IP); it is idempotent.
func (m *Manager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(pod)
}

func (m *Manager) addLocked(pod *v1.Pod) *podState {
	ps := m.pods[pod.UID]
	if ps == nil {
		ps = &podState{slots: map[key]*slot{}}
		m.pods[pod.UID] = ps
	}
	ps.pod = pod
	for _, c := range probedContainers(pod) {
		for _, t := range allTypes {
			p := probeOf(c, t)
			if p == nil {
				continue
			}
			k := key{pod.UID, c.Name, t}
			if s, ok := ps.slots[k]; ok {
				s.container = c
				continue
			}
			ps.slots[k] = &slot{probe: p, container: c, result: initialResult(t)}
		}
	}
	return ps
}

// RemovePod stops all workers of the pod and forgets its results and its
// probe metrics.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[uid]
	if ps == nil {
		return
	}
	for k, s := range ps.slots {
		if s.cancel != nil {
			s.cancel()
		}
		forgetProbe(m.metrics, k, ps.pod)
	}
	delete(m.pods, uid)
}

// ContainerStarted arms the container's workers for a new instance. Results
// start from the instance's prior (what was last reported for it: after a
// kubelet restart, the API's view of a container that kept running) or
// else their initial values, and initialDelaySeconds counts from
// startedAt. Repeating a call for the same containerID arms nothing; it
// only raises a result no probe has settled yet to a better prior (a static
// pod's mirror pod, and so its reported status, may arrive after the first
// sync).
func (m *Manager) ContainerStarted(pod *v1.Pod, containerName, containerID string, startedAt time.Time, prior Prior) {
	var updates []Update
	m.mu.Lock()
	ps := m.addLocked(pod)
	for _, t := range allTypes {
		k := key{pod.UID, containerName, t}
		s := ps.slots[k]
		if s == nil {
			continue
		}
		if s.containerID == containerID {
			if r := SeedResult(t, prior); !s.settled && r == Success && s.result != Success {
				updates = append(updates, m.setLocked(ps, k, s, r))
			}
			continue
		}
		updates = appendReset(updates, k, s, containerID, SeedResult(t, prior))
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		s.trigger = make(chan struct{}, 1)
		m.wg.Add(1)
		go m.runWorker(ctx, workerSpec{key: k, gen: s.gen, probe: s.probe, container: s.container, containerID: containerID, startedAt: startedAt, trigger: s.trigger})
	}
	m.mu.Unlock()
	klog.V(4).InfoS("Probe workers armed", "pod", klog.KObj(pod), "container", containerName, "containerID", containerID)
	m.notify(updates)
}

// ContainerStopped disarms the container's workers (the instance exited or
// was killed) and resets its results: readiness becomes not ready.
func (m *Manager) ContainerStopped(uid types.UID, containerName string) {
	var updates []Update
	m.mu.Lock()
	if ps := m.pods[uid]; ps != nil {
		for _, t := range allTypes {
			k := key{uid, containerName, t}
			if s := ps.slots[k]; s != nil && s.containerID != "" {
				updates = appendReset(updates, k, s, "", initialResult(t))
			}
		}
	}
	m.mu.Unlock()
	m.notify(updates)
}

// appendReset stops s's worker, moves it to a new instance and resets its
// result to seed, recording an Update if the result changed. Caller holds
// m.mu.
func appendReset(updates []Update, k key, s *slot, containerID string, seed Result) []Update {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	s.trigger = nil
	s.gen++
	s.containerID = containerID
	s.settled = false
	if seed != s.result {
		s.result = seed
		updates = append(updates, Update{PodUID: k.uid, ContainerName: k.container, ContainerID: containerID, Type: k.t, Result: seed})
	}
	return updates
}

// setResult records a probe's verdict for the worker of generation gen.
func (m *Manager) setResult(k key, gen uint64, r Result) {
	m.mu.Lock()
	ps := m.pods[k.uid]
	var s *slot
	if ps != nil {
		s = ps.slots[k]
	}
	if s == nil || s.gen != gen {
		m.mu.Unlock()
		return
	}
	s.settled = true
	if s.result == r {
		m.mu.Unlock()
		return
	}
	u := m.setLocked(ps, k, s, r)
	m.mu.Unlock()
	klog.V(2).InfoS("Probe result changed", "podUID", k.uid, "container", k.container, "probe", k.t.String(), "result", r.String())
	m.notify([]Update{u})
}

// setLocked sets s's result to r and returns the Update that says so.
// Caller holds m.mu.
func (m *Manager) setLocked(ps *podState, k key, s *slot, r Result) Update {
	s.result = r
	if k.t == Startup && r == Success {
		// As upstream: readiness is probed as soon as the container counts
		// as started, not at the next slot of its period.
		if rs := ps.slots[key{k.uid, k.container, Readiness}]; rs != nil && rs.trigger != nil && rs.result != Success {
			select {
			case rs.trigger <- struct{}{}:
			default:
			}
		}
	}
	return Update{PodUID: k.uid, ContainerName: k.container, ContainerID: s.containerID, Type: k.t, Result: r}
}

func (m *Manager) notify(updates []Update) {
	for _, u := range updates {
		select {
		case m.updates <- u:
		default:
			klog.ErrorS(nil, "Probe result channel is full; the pod syncs at its next resync", "podUID", u.PodUID, "container", u.ContainerName, "probe", u.Type.String())
		}
	}
}

func (m *Manager) event(pod *v1.Pod, eventtype, reason, format string, args ...any) {
	if m.cfg.Recorder != nil && pod != nil {
		m.cfg.Recorder.Eventf(pod, eventtype, reason, format, args...)
	}
}

// probeContext returns what a worker needs at probe time; ok is false when
// the worker is stale (pod removed or container instance replaced).
func (m *Manager) probeContext(w workerSpec) (pod *v1.Pod, podIP string, started, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[w.key.uid]
	if ps == nil {
		return nil, "", false, false
	}
	s := ps.slots[w.key]
	if s == nil || s.gen != w.gen {
		return nil, "", false, false
	}
	started = m.startedLocked(ps, w.key.uid, w.key.container)
	return ps.pod, ps.pod.Status.PodIP, started, true
}

func (m *Manager) startedLocked(ps *podState, uid types.UID, container string) bool {
	s := ps.slots[key{uid, container, Startup}]
	return s == nil || s.result == Success
}

// Result returns the current result of one probe; Unknown if there is none.
func (m *Manager) Result(uid types.UID, container string, t ProbeType) Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ps := m.pods[uid]; ps != nil {
		if s := ps.slots[key{uid, container, t}]; s != nil {
			return s.result
		}
	}
	return Unknown
}

// Started reports whether the startup probe has succeeded (true when the
// container has none). Callers must still require the container to run.
func (m *Manager) Started(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[uid]
	if ps == nil {
		return true
	}
	return m.startedLocked(ps, uid, container)
}

// Ready reports container readiness: false until started; then the readiness
// probe's result, or true when there is no readiness probe and an instance
// has been reported by ContainerStarted.
func (m *Manager) Ready(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[uid]
	if ps == nil || !m.startedLocked(ps, uid, container) {
		return false
	}
	if s := ps.slots[key{uid, container, Readiness}]; s != nil {
		return s.containerID != "" && s.result == Success
	}
	return m.runningLocked(ps, container)
}

// runningLocked: with no readiness probe, readiness follows whether an
// instance is armed; without any probe slot, the container is assumed running.
func (m *Manager) runningLocked(ps *podState, container string) bool {
	hasSlot := false
	for k, s := range ps.slots {
		if k.container == container {
			hasSlot = true
			if s.containerID != "" {
				return true
			}
		}
	}
	return !hasSlot
}

// LivenessGracePeriod returns the termination grace period (seconds) to use
// when killing container after a liveness or startup failure: the failing
// probe's terminationGracePeriodSeconds, else the pod's, else 30.
func (m *Manager) LivenessGracePeriod(uid types.UID, container string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[uid]
	if ps == nil {
		return defaultGracePeriod
	}
	var p *v1.Probe
	if s := ps.slots[key{uid, container, Startup}]; s != nil && s.result == Failure {
		p = s.probe
	} else if s := ps.slots[key{uid, container, Liveness}]; s != nil {
		p = s.probe
	}
	return ProbeGracePeriod(ps.pod, p)
}

const defaultGracePeriod = 30

// ProbeGracePeriod picks the probe-level grace period over the pod-level one.
func ProbeGracePeriod(pod *v1.Pod, p *v1.Probe) int64 {
	if p != nil && p.TerminationGracePeriodSeconds != nil {
		return *p.TerminationGracePeriodSeconds
	}
	if pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return defaultGracePeriod
}

// Wait blocks until all stopped workers have exited (for tests and shutdown).
func (m *Manager) Wait() { m.wg.Wait() }

// Stop cancels every worker and waits for them to exit.
func (m *Manager) Stop() {
	m.mu.Lock()
	for _, ps := range m.pods {
		for _, s := range ps.slots {
			if s.cancel != nil {
				s.cancel()
			}
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
}
