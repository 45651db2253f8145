package shutdown

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
	"github.com/seed-kubelet/kubelet/internal/events"
)

// reconnectPeriod is how long the manager waits before watching again
// after the bus connection ended, as upstream.
const reconnectPeriod = time.Second

// ErrShuttingDown is the node's status while it shuts down; the Ready
// condition shows its message, as upstream's.
var ErrShuttingDown = errors.New("node is shutting down")

// Killer stops a pod within a grace period after storing the status
// computed from its current one (eviction.Killer.TerminatePod).
type Killer interface {
	TerminatePod(ctx context.Context, pod *v1.Pod, gracePeriod int64, status func(cur v1.PodStatus) v1.PodStatus) error
}

// Config configures a Manager.
type Config struct {
	// Periods (from Periods) must not be empty.
	Periods []Period
	// Connect reaches logind over the system bus (ConnectLogind).
	Connect func() (Logind, error)
	Clock   clock.WithTicker
	// ActivePods lists the pods to stop; Killer stops one.
	ActivePods func() []*v1.Pod
	Killer     Killer
	// Recorder gets the NodeShutdown events on NodeRef.
	Recorder events.Recorder
	NodeRef  *v1.ObjectReference
	// Changed is called when the node starts or stops shutting down, so
	// the node status is written at once; may be nil.
	Changed func()
	// StateDir (the root directory) keeps the last shutdown's times.
	StateDir string
	// StartTime and EndTime are kubelet_graceful_shutdown_start_time_seconds
	// and _end_time_seconds; may be nil.
	StartTime, EndTime prometheus.Gauge
}

// Manager holds a logind delay inhibitor lock and, on PrepareForShutdown,
// stops the pods by priority within their periods, then releases it, as
// upstream's node shutdown manager. Safe for concurrent use.
type Manager struct {
	cfg Config

	mu           sync.Mutex
	shuttingDown bool
	logind       Logind
	lock         Lock
}

// New returns a Manager.
func New(cfg Config) *Manager {
	klog.InfoS("Creating node shutdown manager", "shutdownGracePeriodRequested", PeriodRequested(cfg.Periods),
		"shutdownGracePeriodByPodPriority", cfg.Periods)
	return &Manager{cfg: cfg}
}

// ShutdownStatus is ErrShuttingDown while the node shuts down, else nil.
func (m *Manager) ShutdownStatus() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shuttingDown {
		return ErrShuttingDown
	}
	return nil
}

// Admit rejects every pod while the node shuts down.
func (m *Manager) Admit(*v1.Pod) (ok bool, reason, message string) {
	if m.ShutdownStatus() != nil {
		return false, ReasonNotAdmitted, messageNotAdmitted
	}
	return true, "", ""
}

// Run watches for shutdowns until ctx ends. If the first watch cannot
// start (no system bus, no logind, InhibitDelayMaxSec too small), the
// error is logged and graceful shutdown stays off, as upstream; a watch
// whose bus connection ends is started again after a second.
func (m *Manager) Run(ctx context.Context) {
	stop, err := m.start(ctx)
	if err != nil {
		klog.ErrorS(err, "Failed to start node shutdown manager")
		return
	}
	m.loadMetrics()
	for {
		if stop != nil {
			select {
			case <-ctx.Done():
				return
			case <-stop:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.Clock.After(reconnectPeriod):
		}
		klog.V(1).InfoS("Restarting watch for node shutdown events")
		if stop, err = m.start(ctx); err != nil {
			klog.ErrorS(err, "Unable to watch the node for shutdown events")
		}
	}
}

// start connects, makes sure logind waits long enough, takes the lock and
// handles shutdown events until the connection ends (stop closes then).
func (m *Manager) start(ctx context.Context) (chan struct{}, error) {
	logind, err := m.cfg.Connect()
	if err != nil {
		return nil, err
	}
	if err := m.ensureInhibitDelay(ctx, logind); err != nil {
		logind.Close()
		return nil, err
	}
	m.mu.Lock()
	m.logind = logind
	m.mu.Unlock()
	if err := m.acquireLock(); err != nil {
		logind.Close()
		return nil, err
	}
	signals, err := logind.PrepareForShutdown()
	if err != nil {
		m.releaseLock()
		logind.Close()
		return nil, fmt.Errorf("failed to monitor shutdown: %v", err)
	}
	stop := make(chan struct{})
	go func() {
		defer logind.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case active, ok := <-signals:
				if !ok {
					klog.ErrorS(nil, "Ended to watching the node for shutdown events")
					close(stop)
					return
				}
				m.handle(ctx, active)
			}
		}
	}()
	return stop, nil
}

// ensureInhibitDelay raises logind's InhibitDelayMaxSec to the periods'
// sum when it is smaller, as upstream: a drop-in, a reload, then up to
// five reads 100 ms, 200 ms, ... apart.
func (m *Manager) ensureInhibitDelay(ctx context.Context, logind Logind) error {
	current, err := logind.InhibitDelayMax()
	if err != nil {
		return err
	}
	requested := PeriodRequested(m.cfg.Periods)
	if requested <= current {
		return nil
	}
	if err := logind.OverrideInhibitDelay(requested); err != nil {
		return fmt.Errorf("unable to override inhibit delay by shutdown manager: %v", err)
	}
	if err := logind.ReloadConf(); err != nil {
		return err
	}
	const attempts = 5
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if current, err = logind.InhibitDelayMax(); err != nil {
			return err
		}
		if requested <= current {
			return nil
		}
		if attempt == attempts {
			return fmt.Errorf("node shutdown manager was timed out after %d attempts waiting for logind InhibitDelayMaxSec to update to %v (ShutdownGracePeriod), current value is %v",
				attempt, requested, current)
		}
		klog.V(3).InfoS("InhibitDelayMaxSec still less than requested, retrying", "attempt", attempt, "current", current, "requested", requested)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.cfg.Clock.After(wait):
		}
		wait *= 2
	}
}

func (m *Manager) acquireLock() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lock, err := m.logind.Inhibit()
	if err != nil {
		return err
	}
	if m.lock != nil {
		m.lock.Release()
	}
	m.lock = lock
	return nil
}

func (m *Manager) releaseLock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return
	}
	if err := m.lock.Release(); err != nil {
		klog.ErrorS(err, "Failed to release the inhibitor lock")
	}
	m.lock = nil
}

// handle is one PrepareForShutdown signal: true stops the pods and then
// lets logind go on; false (a cancelled shutdown) takes the lock again.
func (m *Manager) handle(ctx context.Context, active bool) {
	klog.V(1).InfoS("Shutdown manager detected new shutdown event", "event", map[bool]string{true: "shutdown", false: "cancelled"}[active])
	if active {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeNormal, EventNodeShutdown, "Shutdown manager detected shutdown event")
	} else {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeNormal, EventNodeShutdown, "Shutdown manager detected shutdown cancellation")
	}
	m.mu.Lock()
	m.shuttingDown = active
	m.mu.Unlock()
	if m.cfg.Changed != nil {
		m.cfg.Changed()
	}
	if !active {
		if err := m.acquireLock(); err != nil {
			klog.ErrorS(err, "Failed to take the inhibitor lock again after a cancelled shutdown")
		}
		return
	}
	m.processShutdown(ctx)
}

// processShutdown stops the active pods group by group and releases the
// lock, recording when it started and ended.
func (m *Manager) processShutdown(ctx context.Context) {
	klog.V(1).InfoS("Shutdown manager processing shutdown event")
	start := m.cfg.Clock.Now()
	m.storeState(state{StartTime: start})
	setGauge(m.cfg.StartTime, start)
	setGauge(m.cfg.EndTime, time.Time{})
	defer func() {
		end := m.cfg.Clock.Now()
		m.storeState(state{StartTime: start, EndTime: end})
		setGauge(m.cfg.EndTime, end)
		m.releaseLock()
		klog.V(1).InfoS("Shutdown manager completed processing shutdown event, node will shutdown shortly")
	}()
	for _, g := range GroupByPriority(m.cfg.Periods, m.cfg.ActivePods()) {
		if len(g.Pods) == 0 {
			continue
		}
		m.stopGroup(ctx, g)
	}
}

// stopGroup kills a group's pods at once and waits until they are all
// stopped or the group's period is over.
func (m *Manager) stopGroup(ctx context.Context, g Group) {
	var wg sync.WaitGroup
	for _, pod := range g.Pods {
		grace := GracePeriod(pod, g.ShutdownGracePeriodSeconds)
		wg.Add(1)
		go func() {
			defer wg.Done()
			klog.V(1).InfoS("Shutdown manager killing pod with gracePeriod", "pod", klog.KObj(pod), "gracePeriod", grace)
			err := m.cfg.Killer.TerminatePod(ctx, pod, grace, func(cur v1.PodStatus) v1.PodStatus {
				return TerminatedStatus(cur, pod.Generation, m.cfg.Clock.Now())
			})
			if err != nil {
				klog.V(1).InfoS("Shutdown manager failed killing pod", "pod", klog.KObj(pod), "err", err)
				return
			}
			klog.V(1).InfoS("Shutdown manager finished killing pod", "pod", klog.KObj(pod))
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	timer := m.cfg.Clock.NewTimer(time.Duration(g.ShutdownGracePeriodSeconds) * time.Second)
	defer timer.Stop()
	select {
	case <-done:
		klog.V(1).InfoS("Done waiting for all pods in group to terminate", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
	case <-timer.C():
		klog.V(1).InfoS("Shutdown manager pod killing time out", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
	case <-ctx.Done():
	}
}

// state is upstream's graceful_node_shutdown_state file.
type state struct {
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
}

func (m *Manager) storeState(s state) {
	data, err := json.Marshal(s)
	if err == nil {
		err = atomicfile.Write(filepath.Join(m.cfg.StateDir, stateFile), data, 0o644)
	}
	if err != nil {
		klog.ErrorS(err, "Failed to store graceful shutdown state")
	}
}

// loadMetrics sets the gauges from the last shutdown's state, as upstream
// does when the kubelet starts again after a reboot.
func (m *Manager) loadMetrics() {
	data, err := os.ReadFile(filepath.Join(m.cfg.StateDir, stateFile))
	if os.IsNotExist(err) {
		return
	}
	var s state
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		klog.ErrorS(err, "Failed to load graceful shutdown state")
		return
	}
	if !s.StartTime.IsZero() {
		setGauge(m.cfg.StartTime, s.StartTime)
	}
	if !s.EndTime.IsZero() {
		setGauge(m.cfg.EndTime, s.EndTime)
	}
}

func setGauge(g prometheus.Gauge, t time.Time) {
	if g == nil {
		return
	}
	if t.IsZero() {
		g.Set(0)
		return
	}
	g.Set(float64(t.Unix()))
}
