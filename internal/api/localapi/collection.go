package localapi

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// historySize is how many changes a collection remembers for watches that
// resume from a resourceVersion; older ones answer 410 Gone, as the API
// server's watch cache does.
const historySize = 1000

// watchBuffer is how many events a watcher may fall behind before it is
// closed (its client lists again), as the API server drops slow watchers.
const watchBuffer = 256

// change is one change of a collection.
type change struct {
	typ watch.EventType
	// obj is the object after the change (before it, for DELETED); prev
	// is the object before a MODIFIED.
	obj, prev runtime.Object
	rv        uint64
}

// collection serves one resource: the objects compute returns, each with
// the resourceVersion of its last change (one counter for the whole API,
// as etcd's revision), a history of changes and the watchers that follow
// them. Changes are found by comparing compute's answer with the last one.
type collection struct {
	// compute returns the current objects, fresh copies the collection
	// may keep; it is called with mu held.
	compute func() []runtime.Object
	counter *atomic.Uint64

	mu       sync.Mutex
	items    map[string]runtime.Object // by namespace/name
	history  []change                  // ascending rv
	floor    uint64                    // every change after it is in history
	changed  chan struct{}             // closed at the next change
	watchers map[*watcher]struct{}
}

func newCollection(counter *atomic.Uint64, compute func() []runtime.Object) *collection {
	return &collection{compute: compute, counter: counter, items: map[string]runtime.Object{},
		changed: make(chan struct{}), watchers: map[*watcher]struct{}{}, floor: counter.Load()}
}

func objectKey(obj runtime.Object) string {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return acc.GetNamespace() + "/" + acc.GetName()
}

func setRV(obj runtime.Object, rv uint64) {
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetResourceVersion(strconv.FormatUint(rv, 10))
	}
}

func objectRV(obj runtime.Object) string {
	if acc, err := meta.Accessor(obj); err == nil {
		return acc.GetResourceVersion()
	}
	return ""
}

// sameObject compares two versions of an object but for resourceVersion.
func sameObject(old, cur runtime.Object) bool {
	setRV(cur, parseRV(objectRV(old)))
	return reflect.DeepEqual(old, cur)
}

func parseRV(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// refresh recomputes the objects and records what changed.
func (c *collection) refresh() {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[string]runtime.Object{}
	var changes []change
	for _, obj := range c.compute() {
		key := objectKey(obj)
		if _, dup := next[key]; dup {
			continue
		}
		old, had := c.items[key]
		if had && sameObject(old, obj) {
			next[key] = old
			continue
		}
		rv := c.counter.Add(1)
		setRV(obj, rv)
		next[key] = obj
		if had {
			changes = append(changes, change{typ: watch.Modified, obj: obj, prev: old, rv: rv})
		} else {
			changes = append(changes, change{typ: watch.Added, obj: obj, rv: rv})
		}
	}
	for _, key := range sortedKeys(c.items) {
		if _, ok := next[key]; ok {
			continue
		}
		rv := c.counter.Add(1)
		gone := c.items[key].DeepCopyObject()
		setRV(gone, rv)
		changes = append(changes, change{typ: watch.Deleted, obj: gone, rv: rv})
	}
	c.items = next
	if len(changes) == 0 {
		return
	}
	c.history = append(c.history, changes...)
	if over := len(c.history) - historySize; over > 0 {
		c.floor = c.history[over-1].rv
		c.history = slices.Delete(c.history, 0, over)
	}
	for w := range c.watchers {
		for _, ch := range changes {
			if !w.send(ch) {
				delete(c.watchers, w)
				break
			}
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// list returns the objects (shared: callers must not modify them) ordered
// by namespace and name, and the resourceVersion they are current at.
func (c *collection) list() ([]runtime.Object, uint64) {
	c.refresh()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]runtime.Object, 0, len(c.items))
	for _, key := range sortedKeys(c.items) {
		out = append(out, c.items[key])
	}
	return out, c.counter.Load()
}

// get returns the object namespace/name (shared).
func (c *collection) get(namespace, name string) (runtime.Object, bool) {
	c.refresh()
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.items[namespace+"/"+name]
	return obj, ok
}

// waitFor waits until cond holds for the objects (checked now and after
// every change) or ctx ends; it reports whether cond held.
func (c *collection) waitFor(ctx context.Context, cond func(items map[string]runtime.Object) bool) bool {
	c.refresh()
	for {
		c.mu.Lock()
		ok := cond(c.items)
		changed := c.changed
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// watcher receives a collection's changes.
type watcher struct {
	ch     chan change
	closed atomic.Bool
}

// send queues ch, or closes the watcher (false) when it fell behind.
func (w *watcher) send(ch change) bool {
	select {
	case w.ch <- ch:
		return true
	default:
		w.closed.Store(true)
		close(w.ch)
		return false
	}
}

// errGone is returned by watch for a resourceVersion older than history.
type errGone struct{ rv, floor uint64 }

func (e errGone) Error() string {
	return "too old resource version: " + strconv.FormatUint(e.rv, 10) + " (" + strconv.FormatUint(e.floor+1, 10) + ")"
}

// watch starts a watcher. With initial it first gets an ADDED per current
// object; else, with a resourceVersion, the changes after it (errGone when
// they are no longer all known).
func (c *collection) watch(rv uint64, initial bool) (*watcher, []runtime.Object, error) {
	c.refresh()
	c.mu.Lock()
	defer c.mu.Unlock()
	var replay []change
	var current []runtime.Object
	switch {
	case initial:
		for _, key := range sortedKeys(c.items) {
			current = append(current, c.items[key])
		}
	case rv < c.floor:
		return nil, nil, errGone{rv: rv, floor: c.floor}
	default:
		for _, ch := range c.history {
			if ch.rv > rv {
				replay = append(replay, ch)
			}
		}
	}
	w := &watcher{ch: make(chan change, watchBuffer+len(replay))}
	for _, ch := range replay {
		w.ch <- ch
	}
	c.watchers[w] = struct{}{}
	return w, current, nil
}

// stop removes a watcher.
func (c *collection) stop(w *watcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.watchers[w]; ok {
		delete(c.watchers, w)
		close(w.ch)
	}
}

// run refreshes the collection whenever trigger fires, until ctx ends.
func (c *collection) run(ctx context.Context, trigger <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-trigger:
			c.refresh()
		}
	}
}

// splitKey splits namespace/name.
func splitKey(key string) (string, string) {
	ns, name, _ := strings.Cut(key, "/")
	return ns, name
}
