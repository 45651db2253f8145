package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/smp"
)

// Upstream's correlator numbers (client-go tools/record).
const (
	// cacheEntries bounds each of the correlator's three LRU caches.
	cacheEntries = 4096
	// AggregateMaxEvents similar events (same source, object, type and
	// reason, differing messages) within AggregateInterval become one
	// aggregated event.
	AggregateMaxEvents = 10
	AggregateInterval  = 600 * time.Second
	// SpamBurst events per source and object, refilled at SpamQPS.
	SpamBurst = 25
	SpamQPS   = 1. / 300.
	// aggregatePrefix starts an aggregated event's message.
	aggregatePrefix = "(combined from similar events): "
)

// Correlator filters, aggregates and de-duplicates events before they are
// written, as client-go's EventCorrelator does: a source may send SpamBurst
// events about an object and then one per 5 minutes; the AggregateMaxEvents-th
// similar event within AggregateInterval is replaced by an aggregated one;
// an event already written (same key) is written again as a patch of its
// count, lastTimestamp and message. Safe for concurrent use.
//
// Beyond upstream, Forget drops what the caches hold about an object that
// is gone (a deleted pod), so that their memory follows the objects that
// exist rather than the last 4096 that did: with pods created and deleted
// all day, upstream's caches stay full.
type Correlator struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	spam       *lru.Cache // spamKey → spamEntry
	aggregates *lru.Cache // aggregateKey → aggregateRecord
	written    *lru.Cache // eventKey (or aggregateKey) → writtenEvent
	// byObject indexes the entries of the three caches by the UID of the
	// object their events are about; entries leave it when evicted.
	byObject map[types.UID]map[cachedKey]struct{}
}

// cachedKey is a key of one of the correlator's caches.
type cachedKey struct {
	cache *lru.Cache
	key   string
}

// NewCorrelator returns a correlator with upstream's limits.
func NewCorrelator(clk clock.PassiveClock) *Correlator {
	c := &Correlator{clock: clk, byObject: map[types.UID]map[cachedKey]struct{}{}}
	c.spam = lru.NewWithEvictionFunc(cacheEntries, c.evicted(func() *lru.Cache { return c.spam }))
	c.aggregates = lru.NewWithEvictionFunc(cacheEntries, c.evicted(func() *lru.Cache { return c.aggregates }))
	c.written = lru.NewWithEvictionFunc(cacheEntries, c.evicted(func() *lru.Cache { return c.written }))
	return c
}

// add stores value under key in cache, indexed by the event's object.
func (c *Correlator) add(cache *lru.Cache, key string, value cached) {
	cache.Add(key, value)
	uid := value.object()
	if uid == "" {
		return
	}
	keys, ok := c.byObject[uid]
	if !ok {
		keys = map[cachedKey]struct{}{}
		c.byObject[uid] = keys
	}
	keys[cachedKey{cache, key}] = struct{}{}
}

// evicted is a cache's eviction function: the entry leaves the index. It
// runs under c.mu (inside add or Forget).
func (c *Correlator) evicted(cache func() *lru.Cache) lru.EvictionFunc {
	return func(key lru.Key, value any) {
		uid := value.(cached).object()
		keys := c.byObject[uid]
		delete(keys, cachedKey{cache(), key.(string)})
		if len(keys) == 0 {
			delete(c.byObject, uid)
		}
	}
}

// Forget drops every cached entry about the object uid: its spam bucket,
// its aggregation records and its written events. An event about it
// afterwards starts afresh, as after an eviction.
func (c *Correlator) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.byObject[uid] {
		k.cache.Remove(k.key)
	}
	delete(c.byObject, uid)
}

// Correlated is the correlator's decision for one event.
type Correlated struct {
	// Event to write; nil when Skip.
	Event *v1.Event
	// Patch, when set, updates the existing event Event.Name instead of
	// creating one (Event.Count > 1).
	Patch []byte
	// Skip: the spam filter dropped the event.
	Skip bool
}

// cached is a value of the correlator's caches: it knows its object.
type cached interface{ object() types.UID }

type aggregateRecord struct {
	messages sets.Set[string] // distinct messages seen, at most AggregateMaxEvents-1 kept
	last     time.Time
	uid      types.UID
}

type writtenEvent struct {
	count           int32
	firstTimestamp  metav1.Time
	name            string
	resourceVersion string
	uid             types.UID
}

type spamEntry struct {
	limiter flowcontrol.PassiveRateLimiter
	uid     types.UID
}

func (r aggregateRecord) object() types.UID { return r.uid }
func (w writtenEvent) object() types.UID    { return w.uid }
func (s spamEntry) object() types.UID       { return s.uid }

// eventKey identifies identical events: everything but the timestamps,
// count and name.
func eventKey(e *v1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, o.FieldPath, string(o.UID), o.APIVersion, e.Type, e.Reason, e.Message}, "")
}

// aggregateKey identifies similar events: the same but for the message
// (and the field path).
func aggregateKey(e *v1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type, e.Reason, e.ReportingController, e.ReportingInstance}, "")
}

// Correlate decides what to write for e, which it does not modify. An error
// (the patch could not be built) comes with a usable result, as upstream.
func (c *Correlator) Correlate(e *v1.Event) (Correlated, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev, key := c.aggregate(e)
	ev, patch, err := c.observe(ev, key)
	if !c.allow(ev) {
		return Correlated{Skip: true}, nil
	}
	return Correlated{Event: ev, Patch: patch}, err
}

// aggregate returns the event to write and the key it is de-duplicated by:
// e and its own key, or, from the AggregateMaxEvents-th distinct message on,
// a new aggregated event keyed by the similar events' key.
func (c *Correlator) aggregate(e *v1.Event) (*v1.Event, string) {
	now := c.clock.Now()
	akey := aggregateKey(e)
	var rec aggregateRecord
	if v, ok := c.aggregates.Get(akey); ok {
		rec = v.(aggregateRecord)
	}
	if now.Sub(rec.last) > AggregateInterval {
		rec = aggregateRecord{messages: sets.New[string](), uid: e.InvolvedObject.UID}
	}
	rec.messages.Insert(e.Message)
	rec.last = now
	c.add(c.aggregates, akey, rec)
	if rec.messages.Len() < AggregateMaxEvents {
		return e, eventKey(e)
	}
	rec.messages.PopAny() // keep the set below the threshold
	ts := metav1.NewTime(now)
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", e.InvolvedObject.Name, now.UnixNano()), Namespace: e.Namespace},
		Count:          1,
		FirstTimestamp: ts,
		LastTimestamp:  ts,
		InvolvedObject: e.InvolvedObject,
		Message:        aggregatePrefix + e.Message,
		Type:           e.Type,
		Reason:         e.Reason,
		Source:         e.Source,
	}, akey
}

// observe counts e under key: a repeat takes the first write's name,
// resource version and first timestamp, the next count, and a patch of
// count, lastTimestamp and message.
func (c *Correlator) observe(e *v1.Event, key string) (*v1.Event, []byte, error) {
	ev := *e
	var patch []byte
	var err error
	if v, ok := c.written.Get(key); ok {
		w := v.(writtenEvent)
		if w.count > 0 {
			ev.Name, ev.ResourceVersion, ev.FirstTimestamp, ev.Count = w.name, w.resourceVersion, w.firstTimestamp, w.count+1
			patch, err = repeatPatch(&ev)
		}
	}
	c.add(c.written, key, writtenEvent{count: ev.Count, firstTimestamp: ev.FirstTimestamp, name: ev.Name, resourceVersion: ev.ResourceVersion, uid: ev.InvolvedObject.UID})
	return &ev, patch, err
}

// repeatPatch is the strategic merge patch upstream sends for a repeat: the
// event against itself without count, message and with lastTimestamp at the
// epoch, so count, lastTimestamp and message are what it carries.
func repeatPatch(ev *v1.Event) ([]byte, error) {
	base := *ev
	base.Count, base.Message, base.LastTimestamp = 0, "", metav1.NewTime(time.Unix(0, 0))
	newData, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	oldData, err := json.Marshal(&base)
	if err != nil {
		return nil, err
	}
	return smp.CreateTwoWayMergePatch(oldData, newData, ev)
}

// allow takes a token from e's source and object bucket.
func (c *Correlator) allow(e *v1.Event) bool {
	key := SpamKey(e)
	var rl flowcontrol.PassiveRateLimiter
	if v, ok := c.spam.Get(key); ok {
		rl = v.(spamEntry).limiter
	} else {
		rl = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(SpamQPS, SpamBurst, c.clock)
	}
	ok := rl.TryAccept()
	c.add(c.spam, key, spamEntry{limiter: rl, uid: e.InvolvedObject.UID})
	return ok
}

// UpdateState records what the API server returned for a written event, so
// its next repeat patches it.
func (c *Correlator) UpdateState(e *v1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(c.written, eventKey(e), writtenEvent{count: e.Count, firstTimestamp: e.FirstTimestamp, name: e.Name, resourceVersion: e.ResourceVersion, uid: e.InvolvedObject.UID})
}
