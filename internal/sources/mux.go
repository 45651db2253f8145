package sources

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// updatesBuffer is the capacity of the Updates channel, as upstream.
const updatesBuffer = 50

// MuxConfig configures NewPodConfig.
type MuxConfig struct {
	// Context bounds the mux: the goroutine reading each source channel
	// ends when it is done. Required.
	Context context.Context
	// Clock stamps the first-seen annotation of pods that lack one.
	// Optional; defaults to the real clock.
	Clock clock.Clock
}

// PodConfig merges the snapshots of several pod sources into one ordered
// stream of incremental PodUpdates.
type PodConfig struct {
	ctx     context.Context
	clock   clock.Clock
	updates chan PodUpdate

	// channelsMu guards channels.
	channelsMu sync.Mutex
	channels   map[string]chan []*v1.Pod

	// mergeMu serialises merges so updates leave in a consistent order;
	// it guards pods.
	mergeMu sync.Mutex
	pods    map[string]map[types.UID]*v1.Pod

	// seenMu guards seen: the sources whose first snapshot was merged and
	// whose resulting updates were handed to the Updates channel.
	seenMu sync.RWMutex
	seen   sets.Set[string]

	// listeners counts the running source goroutines (for tests).
	listeners sync.WaitGroup
}

// NewPodConfig returns a mux with no sources.
func NewPodConfig(cfg MuxConfig) *PodConfig {
	ctx := cfg.Context
	if ctx == nil {
		klog.InfoS("Pod config mux created without a context; its goroutines will never end")
		ctx = context.Background()
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PodConfig{
		ctx:      ctx,
		clock:    clk,
		updates:  make(chan PodUpdate, updatesBuffer),
		channels: map[string]chan []*v1.Pod{},
		pods:     map[string]map[types.UID]*v1.Pod{},
		seen:     sets.New[string](),
	}
}

// Channel returns the channel on which source pushes full snapshots of its
// pods, creating it (and the goroutine that merges from it) on first use.
// Calling it again with the same source returns the same channel. The mux
// takes ownership of nothing: it deep-copies the pods it keeps.
func (c *PodConfig) Channel(source string) chan<- []*v1.Pod {
	c.channelsMu.Lock()
	defer c.channelsMu.Unlock()
	if ch, ok := c.channels[source]; ok {
		return ch
	}
	ch := make(chan []*v1.Pod)
	c.channels[source] = ch
	c.listeners.Add(1)
	go func() {
		defer c.listeners.Done()
		c.listen(source, ch)
	}()
	return ch
}

// Updates returns the stream of incremental updates from all sources.
func (c *PodConfig) Updates() <-chan PodUpdate {
	return c.updates
}

// SeenAllSources reports whether every expected source has delivered at
// least one snapshot (and its updates were queued on Updates).
func (c *PodConfig) SeenAllSources(expected sets.Set[string]) bool {
	c.seenMu.RLock()
	defer c.seenMu.RUnlock()
	return c.seen.IsSuperset(expected)
}

func (c *PodConfig) listen(source string, ch <-chan []*v1.Pod) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case snapshot, ok := <-ch:
			if !ok {
				return
			}
			c.merge(source, snapshot)
		}
	}
}

// merge replaces source's pods with snapshot and emits what changed.
func (c *PodConfig) merge(source string, snapshot []*v1.Pod) {
	c.mergeMu.Lock()
	defer c.mergeMu.Unlock()

	prev := c.pods[source]
	next, rejected := indexSnapshot(source, snapshot, prev, c.clock.Now())
	for _, r := range rejected {
		klog.InfoS("Ignoring pod from source", "source", source, "pod", klog.KObj(r.pod), "podUID", r.pod.UID, "reason", r.reason)
	}
	c.pods[source] = next

	for _, u := range diff(prev, next).podUpdates(source) {
		klog.V(4).InfoS("Pod config update", "source", source, "op", u.Op, "pods", klog.KObjSlice(u.Pods))
		select {
		case c.updates <- u:
		case <-c.ctx.Done():
			return
		}
	}

	c.seenMu.Lock()
	if !c.seen.Has(source) {
		klog.V(2).InfoS("Pod source delivered its first snapshot", "source", source, "pods", len(next))
		c.seen.Insert(source)
	}
	c.seenMu.Unlock()
}
