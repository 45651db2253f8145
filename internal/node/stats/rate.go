package stats

import (
	"sync"
	"time"
)

// cpuSample is one reading of a cumulative CPU counter.
type cpuSample struct {
	At    time.Time
	Nanos uint64
}

// usageNanoCores is the CPU rate, in billionths of a core, between two
// readings; ok is false when it cannot be told (no time passed, or the
// counter went back, as when a cgroup is recreated).
func usageNanoCores(prev, cur cpuSample) (uint64, bool) {
	dt := cur.At.Sub(prev.At)
	if dt <= 0 || cur.Nanos < prev.Nanos {
		return 0, false
	}
	return uint64(float64(cur.Nanos-prev.Nanos) / float64(dt) * float64(time.Second)), true
}

// rateEntry is what cpuRates keeps per entity.
type rateEntry struct {
	base     cpuSample // the reading rates are measured from
	rate     *uint64   // the last rate measured, nil before the second reading
	lastSeen time.Time // by the clock, for pruning
}

// cpuRates turns cumulative CPU readings into rates by keeping the previous
// reading per entity (node, system container, pod, container). A reading
// less than minInterval after the kept one returns the last rate and keeps
// the older base, so close-together callers (a scrape and a /stats/summary
// request) don't measure noise over a tiny window.
type cpuRates struct {
	minInterval time.Duration
	maxIdle     time.Duration

	mu      sync.Mutex
	entries map[string]*rateEntry
}

func newCPURates(minInterval, maxIdle time.Duration) *cpuRates {
	return &cpuRates{minInterval: minInterval, maxIdle: maxIdle, entries: map[string]*rateEntry{}}
}

// observe records cur for key and returns its rate, nil until one is known.
// now is the clock's time, used only to age entries out.
func (r *cpuRates) observe(key string, cur cpuSample, now time.Time) *uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok {
		r.entries[key] = &rateEntry{base: cur, lastSeen: now}
		return nil
	}
	e.lastSeen = now
	if cur.Nanos < e.base.Nanos || cur.At.Before(e.base.At) {
		// counter reset or a clock step: start over.
		*e = rateEntry{base: cur, lastSeen: now}
		return nil
	}
	if cur.At.Sub(e.base.At) >= r.minInterval {
		if v, ok := usageNanoCores(e.base, cur); ok {
			e.rate = &v
		}
		e.base = cur
	}
	return copyPtr(e.rate)
}

// known reports whether key has a base reading already.
func (r *cpuRates) known(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.entries[key]
	return ok
}

// prune drops entities not observed for maxIdle.
func (r *cpuRates) prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.entries {
		if now.Sub(e.lastSeen) > r.maxIdle {
			delete(r.entries, k)
		}
	}
}
