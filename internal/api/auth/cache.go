package auth

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// expiringCache maps keys to values until their TTL passes on the clock.
// When full it drops expired entries, then arbitrary ones.
type expiringCache[V any] struct {
	clock   clock.PassiveClock
	maxSize int

	mu      sync.Mutex
	entries map[string]cacheEntry[V]
}

type cacheEntry[V any] struct {
	value   V
	expires time.Time
}

func newExpiringCache[V any](clk clock.PassiveClock, maxSize int) *expiringCache[V] {
	return &expiringCache[V]{clock: clk, maxSize: maxSize, entries: map[string]cacheEntry[V]{}}
}

func (c *expiringCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	if !c.clock.Now().Before(e.expires) {
		delete(c.entries, key)
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *expiringCache[V]) set(key string, value V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if _, exists := c.entries[key]; !exists && len(c.entries) >= c.maxSize {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.maxSize {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry[V]{value: value, expires: now.Add(ttl)}
}
