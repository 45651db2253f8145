package prober

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// SeedResult is the result a probe starts from for a container instance
// it has not probed yet, as upstream's prober adopts a container: what was
// last reported for the instance (Prior) where that says ready or started,
// else the initial value. A kubelet restart so flips readiness in neither
// direction, never re-runs a startup probe that passed, and never kills a
// container over anything that happened before it. It is pure.
func SeedResult(t ProbeType, prior Prior) Result {
	switch {
	case t == Readiness && prior.Ready, t == Startup && prior.Started:
		return Success
	}
	return initialResult(t)
}

// initialResult is the value a probe reports for a fresh container instance:
// liveness assumes healthy, readiness assumes not ready, startup is unknown.
func initialResult(t ProbeType) Result {
	switch t {
	case Liveness:
		return Success
	case Readiness:
		return Failure
	default:
		return Unknown
	}
}

func defaulted(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

func probePeriod(p *v1.Probe) time.Duration {
	return time.Duration(defaulted(p.PeriodSeconds, 10)) * time.Second
}

// thresholdState counts consecutive identical probe results.
type thresholdState struct {
	last Result
	run  int32
}

// observe records r and reports whether the worker's result should now be
// set to r (the consecutive-run threshold for r has been reached).
func observe(s thresholdState, r Result, successThreshold, failureThreshold int32) (thresholdState, bool) {
	if r == s.last {
		s.run++
	} else {
		s = thresholdState{last: r, run: 1}
	}
	switch r {
	case Success:
		return s, s.run >= defaulted(successThreshold, 1)
	case Failure:
		return s, s.run >= defaulted(failureThreshold, 3)
	default:
		return s, false
	}
}

// nextRun returns the first slot on the period grid after now.
func nextRun(prev time.Time, period time.Duration, now time.Time) time.Time {
	next := prev.Add(period)
	for !next.After(now) {
		next = next.Add(period)
	}
	return next
}

// workerSpec is the immutable description of one armed probe worker.
type workerSpec struct {
	key         key
	gen         uint64
	probe       *v1.Probe
	container   *v1.Container
	containerID string
	startedAt   time.Time
	// trigger wakes the worker for an immediate probe off its schedule.
	trigger <-chan struct{}
}

// sleepUntil waits for t, a trigger or the end of ctx; ok is false when ctx
// ended, triggered is true when the wait ended early by trigger.
func sleepUntil(ctx context.Context, clk clock.WithTicker, t time.Time, trigger <-chan struct{}) (triggered, ok bool) {
	d := t.Sub(clk.Now())
	if d <= 0 {
		return false, ctx.Err() == nil
	}
	timer := clk.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false, false
	case <-trigger:
		return true, ctx.Err() == nil
	case <-timer.C():
		return false, true
	}
}

// runWorker probes on the schedule startedAt+initialDelay, then every period,
// plus once whenever triggered (the schedule stays), until ctx is cancelled
// or the worker goes on hold.
func (m *Manager) runWorker(ctx context.Context, w workerSpec) {
	defer m.wg.Done()
	logger := klog.FromContext(ctx).WithValues("podUID", w.key.uid, "container", w.key.container, "probe", w.key.t.String(), "containerID", w.containerID)
	next := w.startedAt.Add(time.Duration(w.probe.InitialDelaySeconds) * time.Second)
	period := probePeriod(w.probe)
	var th thresholdState
	for {
		triggered, ok := sleepUntil(ctx, m.clock, next, w.trigger)
		if !ok {
			return
		}
		var keepGoing bool
		th, keepGoing = m.probeStep(ctx, logger, w, th)
		if !keepGoing {
			logger.V(4).Info("Probe worker stopped")
			return
		}
		if !triggered {
			next = nextRun(next, period, m.clock.Now())
		}
	}
}

func (m *Manager) probeStep(ctx context.Context, logger klog.Logger, w workerSpec, th thresholdState) (thresholdState, bool) {
	pod, podIP, started, ok := m.probeContext(w)
	if !ok || ctx.Err() != nil {
		return th, false
	}
	if w.key.t == Startup && started {
		return th, false
	}
	if w.key.t != Startup && !started {
		return th, true
	}
	start := m.clock.Now()
	o, err := probeOnce(ctx, w.probe, w.container, w.containerID, podIP, m.cfg.Runtime)
	if ctx.Err() != nil {
		return th, false
	}
	if err == nil {
		recordProbe(m.metrics, w.key, pod, o.result, m.clock.Since(start))
	}
	if err != nil {
		logger.V(1).Info("Probe errored", "err", err)
		m.event(pod, v1.EventTypeWarning, "Unhealthy", "%s probe errored: %v", w.key.t, err)
		return th, true
	}
	switch {
	case o.result == Failure:
		logger.V(1).Info("Probe failed", "output", o.output)
		m.event(pod, v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", w.key.t, o.output)
	case o.warning:
		m.event(pod, v1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", w.key.t, o.output)
	default:
		logger.V(5).Info("Probe succeeded")
	}
	var flip bool
	th, flip = observe(th, o.result, w.probe.SuccessThreshold, w.probe.FailureThreshold)
	if !flip {
		return th, true
	}
	m.setResult(w.key, w.gen, o.result)
	if o.result == Failure && w.key.t != Readiness {
		// The container will be restarted; stop until a new instance arrives.
		return th, false
	}
	if o.result == Success && w.key.t == Startup {
		return th, false
	}
	return th, true
}
