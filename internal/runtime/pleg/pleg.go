package pleg

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// recordRunning sets the running pods and containers gauges from a relist.
func recordRunning(m *metrics.Metrics, pods []*kuberuntime.RunningPod) {
	running := 0
	byState := map[kuberuntime.ContainerState]int{}
	for _, p := range pods {
		for _, sb := range p.Sandboxes {
			if sb.Ready {
				running++
				break
			}
		}
		for _, c := range p.Containers {
			byState[c.State]++
		}
	}
	m.RunningPods.Set(float64(running))
	for _, st := range []kuberuntime.ContainerState{kuberuntime.StateCreated, kuberuntime.StateRunning, kuberuntime.StateExited, kuberuntime.StateUnknown} {
		m.RunningContainers.WithLabelValues(string(st)).Set(float64(byState[st]))
	}
}

// EventType is what happened to a container.
type EventType string

const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	ContainerChanged EventType = "ContainerChanged"
)

// Event is one change of one pod.
type Event struct {
	ID   types.UID
	Type EventType
	// Data is the container ID.
	Data string
	// Source is "relist" or "stream" (the runtime's event stream).
	Source string
}

// Lister lists pods on the runtime.
type Lister interface {
	GetPods(ctx context.Context, all bool) ([]*kuberuntime.RunningPod, error)
}

// Config configures a PLEG.
type Config struct {
	Lister Lister      // required
	Clock  clock.Clock // required
	// Events is the runtime service whose GetContainerEvents stream is
	// used when available; nil disables the stream.
	Events runtimeapi.RuntimeServiceClient
	// RelistPeriod between relists (1s upstream).
	RelistPeriod time.Duration
	// StreamRelistPeriod replaces RelistPeriod while the event stream works.
	StreamRelistPeriod time.Duration
	// RelistThreshold after which PLEG is unhealthy (3m upstream).
	RelistThreshold time.Duration
	// Metrics receives the relist durations and the running pods and
	// containers; nil means a private set nobody serves.
	Metrics *metrics.Metrics
}

// PLEG generates pod lifecycle events.
type PLEG struct {
	cfg        Config
	out        chan Event
	mu         sync.Mutex
	last       map[types.UID]map[string]kuberuntime.ContainerState
	lastRelist time.Time
	// pods is the last relist's listing, shared read-only (Recent).
	pods      []*kuberuntime.RunningPod
	streaming bool
}

// New returns a PLEG.
func New(cfg Config) *PLEG {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &PLEG{cfg: cfg, out: make(chan Event, 1000)}
}

// Events is the channel of pod lifecycle events.
func (p *PLEG) Events() <-chan Event { return p.out }

// Run relists (and follows the event stream) until ctx ends.
func (p *PLEG) Run(ctx context.Context) {
	if p.cfg.Events != nil {
		go p.stream(ctx)
	}
	for {
		p.Relist(ctx)
		period := p.cfg.RelistPeriod
		p.mu.Lock()
		if p.streaming && p.cfg.StreamRelistPeriod > 0 {
			period = p.cfg.StreamRelistPeriod
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-p.cfg.Clock.After(period):
		}
	}
}

// Relist lists the runtime once and emits the differences.
func (p *PLEG) Relist(ctx context.Context) {
	start := p.cfg.Clock.Now()
	pods, err := p.cfg.Lister.GetPods(ctx, true)
	if err != nil {
		klog.ErrorS(err, "PLEG: cannot list pods from the runtime")
		return
	}
	cur := make(map[types.UID]map[string]kuberuntime.ContainerState, len(pods))
	recordRunning(p.cfg.Metrics, pods)
	for _, pod := range pods {
		m := make(map[string]kuberuntime.ContainerState, len(pod.Containers))
		for _, c := range pod.Containers {
			m[c.ID] = c.State
		}
		cur[pod.UID] = m
	}
	p.mu.Lock()
	events := Diff(p.last, cur)
	p.last = cur
	p.pods = pods
	if !p.lastRelist.IsZero() {
		p.cfg.Metrics.PLEGRelistInterval.Observe(start.Sub(p.lastRelist).Seconds())
	}
	p.lastRelist = start
	p.mu.Unlock()
	p.cfg.Metrics.PLEGRelistDuration.Observe(p.cfg.Clock.Since(start).Seconds())
	for _, e := range events {
		e.Source = "relist"
		p.emit(e)
	}
}

func (p *PLEG) emit(e Event) {
	select {
	case p.out <- e:
	default:
		klog.V(2).InfoS("PLEG event channel is full, discarding event (the next relist catches up)", "podUID", e.ID, "type", e.Type)
	}
}

// Recent returns the pods of the last relist if it started at most maxAge
// ago, so that a reader wanting the runtime's pods about as fresh as a
// relist (the /metrics/cadvisor scrape) shares it instead of listing the
// runtime again. The pods are shared: read them, never change them.
func (p *PLEG) Recent(maxAge time.Duration) ([]*kuberuntime.RunningPod, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods == nil || p.cfg.Clock.Since(p.lastRelist) > maxAge {
		return nil, false
	}
	return p.pods, true
}

// Healthy reports whether relisting keeps up.
func (p *PLEG) Healthy() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastRelist.IsZero() {
		return true, nil
	}
	if since := p.cfg.Clock.Since(p.lastRelist); since > p.cfg.RelistThreshold {
		return false, errNotHealthy(since, p.cfg.RelistThreshold)
	}
	return true, nil
}

// Diff compares two relists; it is pure. Containers are keyed by ID.
func Diff(old, cur map[types.UID]map[string]kuberuntime.ContainerState) []Event {
	var out []Event
	for uid, cs := range cur {
		before := old[uid]
		for id, st := range cs {
			prev, had := before[id]
			if had && prev == st {
				continue
			}
			switch st {
			case kuberuntime.StateRunning:
				out = append(out, Event{ID: uid, Type: ContainerStarted, Data: id})
			case kuberuntime.StateExited:
				out = append(out, Event{ID: uid, Type: ContainerDied, Data: id})
			default:
				out = append(out, Event{ID: uid, Type: ContainerChanged, Data: id})
			}
		}
		for id := range before {
			if _, ok := cs[id]; !ok {
				out = append(out, Event{ID: uid, Type: ContainerRemoved, Data: id})
			}
		}
	}
	for uid, before := range old {
		if _, ok := cur[uid]; ok {
			continue
		}
		for id := range before {
			out = append(out, Event{ID: uid, Type: ContainerRemoved, Data: id})
		}
	}
	return out
}

// stream follows GetContainerEvents; it falls back to relisting when the
// runtime does not implement it and reconnects with back-off otherwise.
func (p *PLEG) stream(ctx context.Context) {
	delays := backoff.Doubling(time.Second, 30*time.Second)
	for ctx.Err() == nil {
		err := p.follow(ctx)
		p.setStreaming(false)
		if ctx.Err() != nil {
			return
		}
		if grpcstatus.Code(err) == codes.Unimplemented {
			klog.InfoS("The runtime has no container event stream; relying on relisting", "relistPeriod", p.cfg.RelistPeriod)
			return
		}
		delay := delays.Step()
		klog.V(2).InfoS("Container event stream ended, reconnecting", "err", err, "after", delay)
		select {
		case <-ctx.Done():
			return
		case <-p.cfg.Clock.After(delay):
		}
	}
}

func (p *PLEG) setStreaming(on bool) {
	p.mu.Lock()
	p.streaming = on
	p.mu.Unlock()
}

func (p *PLEG) follow(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := p.cfg.Events.GetContainerEvents(sctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return err
	}
	for {
		ev, err := s.Recv()
		if err != nil {
			return err
		}
		if !p.isStreaming() {
			klog.InfoS("Following the runtime's container event stream")
			p.setStreaming(true)
		}
		meta, err := criconfig.SandboxMetaFromLabels(ev.GetPodSandboxStatus().GetLabels())
		if err != nil {
			continue
		}
		var t EventType
		switch ev.ContainerEventType {
		case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
			t = ContainerStarted
		case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
			t = ContainerDied
		case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
			t = ContainerRemoved
		default:
			t = ContainerChanged
		}
		p.emit(Event{ID: meta.PodUID, Type: t, Data: ev.ContainerId, Source: "stream"})
	}
}

func (p *PLEG) isStreaming() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streaming
}
