package podinputs

import (
	"context"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Entries nobody asked for in idleTimeout are dropped, checked at most once
// per sweepInterval, so the cache does not grow with every object ever read.
const (
	idleTimeout   = 10 * time.Minute
	sweepInterval = time.Minute
)

type cacheKey struct {
	kind, namespace, name string
}

// cacheEntry holds the last answer for one key. Its mutex is held across the
// fetch, so concurrent readers of a stale key make one API call between them.
type cacheEntry struct {
	mu      sync.Mutex
	obj     runtime.Object // the last object read, nil after a NotFound
	err     error          // NotFound from the last read, else nil
	fetched time.Time
	used    time.Time // guarded by ttlCache.mu
}

// fetchFunc reads the object from the API server. refresh says a good copy
// is cached already, so the apiserver's own (watch) cache may answer.
type fetchFunc func(ctx context.Context, refresh bool) (runtime.Object, error)

// ttlCache is a TTL-based object store with the semantics of upstream's
// "Cache" change detection strategy: a fresh good copy is served without a
// call; NotFound is remembered but always re-checked; a failed refresh keeps
// serving the last answer; a refresh that returns an older resourceVersion
// than the cached copy is ignored.
type ttlCache struct {
	clock clock.Clock

	mu        sync.Mutex
	entries   map[cacheKey]*cacheEntry
	lastSweep time.Time
}

func newTTLCache(clk clock.Clock) *ttlCache {
	return &ttlCache{clock: clk, entries: map[cacheKey]*cacheEntry{}, lastSweep: clk.Now()}
}

func (c *ttlCache) entry(key cacheKey) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if now.Sub(c.lastSweep) >= sweepInterval {
		for k, e := range c.entries {
			if now.Sub(e.used) >= idleTimeout {
				delete(c.entries, k)
			}
		}
		c.lastSweep = now
	}
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	e.used = now
	return e
}

func (c *ttlCache) get(ctx context.Context, key cacheKey, ttl time.Duration, fetch fetchFunc) (runtime.Object, error) {
	e := c.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()

	now := c.clock.Now()
	good := e.obj != nil && e.err == nil
	if good && now.Before(e.fetched.Add(ttl)) {
		return e.obj, nil
	}
	obj, err := fetch(ctx, good)
	switch {
	case err == nil:
		if good && olderThan(obj, e.obj) {
			klog.V(4).InfoS("Ignoring an older copy from the API server", "kind", key.kind, "object", klog.KRef(key.namespace, key.name))
			return e.obj, nil
		}
		e.obj, e.err, e.fetched = obj, nil, now
	case apierrors.IsNotFound(err):
		e.obj, e.err, e.fetched = nil, err, now
	case e.obj == nil && e.err == nil:
		// Nothing cached to fall back on.
		return nil, err
	default:
		klog.V(2).InfoS("Refresh failed, serving the cached answer", "kind", key.kind, "object", klog.KRef(key.namespace, key.name), "err", err)
	}
	return e.obj, e.err
}

// olderThan reports whether a's resourceVersion is below b's; versions that
// are not numbers compare as not older.
func olderThan(a, b runtime.Object) bool {
	va, okA := resourceVersion(a)
	vb, okB := resourceVersion(b)
	return okA && okB && va < vb
}

func resourceVersion(obj runtime.Object) (uint64, bool) {
	acc, err := meta.CommonAccessor(obj)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(acc.GetResourceVersion(), 10, 64)
	return v, err == nil
}
