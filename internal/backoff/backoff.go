package backoff

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

type entry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// Backoff tracks a delay per key. Safe for concurrent use.
type Backoff struct {
	initial, max time.Duration
	clock        clock.Clock
	mu           sync.Mutex
	entries      map[string]*entry
}

// New returns a back-off that starts at initial and caps at max.
func New(initial, max time.Duration, clk clock.Clock) *Backoff {
	return &Backoff{initial: initial, max: max, clock: clk, entries: map[string]*entry{}}
}

// expired reports whether the entry has been quiet long enough, measured
// from eventTime (usually when the container last finished), to reset.
func (b *Backoff) expired(e *entry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > 2*b.max
}

// Next records a failure of key that happened at eventTime and grows its
// delay: Initial on the first failure (or after a reset), doubled after.
func (b *Backoff) Next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		b.entries[key] = &entry{delay: b.initial, lastUpdate: b.clock.Now()}
		return
	}
	e.delay *= 2
	if e.delay > b.max {
		e.delay = b.max
	}
	e.lastUpdate = b.clock.Now()
}

// Remaining returns how long key must still wait after a failure at
// eventTime; zero when it may go ahead now.
func (b *Backoff) Remaining(key string, eventTime time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		return 0
	}
	left := e.delay - b.clock.Since(eventTime)
	if left < 0 {
		return 0
	}
	return left
}

// Delay is the current delay of key (zero when unknown).
func (b *Backoff) Delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// Reset forgets key.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC forgets keys that have been quiet for 2*Max.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for k, e := range b.entries {
		if now.Sub(e.lastUpdate) > 2*b.max {
			delete(b.entries, k)
		}
	}
}
