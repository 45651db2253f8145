package localapi

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// objects is a compute function over a settable set of config maps, in
// name order (as the server's compute functions list them).
type objects struct{ data map[string]string }

func (o *objects) compute() []runtime.Object {
	var out []runtime.Object
	for _, name := range sortedKeys(o.data) {
		out = append(out, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"v": o.data[name]}})
	}
	return out
}

func TestCollectionChangesAndResume(t *testing.T) {
	var counter atomic.Uint64
	counter.Store(100)
	src := &objects{data: map[string]string{"a": "1"}}
	c := newCollection(&counter, src.compute)
	items, rv := c.list()
	if len(items) != 1 || objectRV(items[0]) != "101" || rv != 101 {
		t.Fatalf("first list: %v at %d", items, rv)
	}
	// Nothing changed: no new version.
	if _, rv2 := c.list(); rv2 != rv {
		t.Fatalf("an unchanged list moved to %d", rv2)
	}

	src.data = map[string]string{"a": "2", "b": "1"}
	c.refresh()
	delete(src.data, "a")
	c.refresh()

	w, _, err := c.watch(rv, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		ch := <-w.ch
		got = append(got, string(ch.typ)+" "+objectKey(ch.obj)+" "+strconv.FormatUint(ch.rv, 10))
	}
	want := []string{"MODIFIED default/a 102", "ADDED default/b 103", "DELETED default/a 104"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("changes after %d = %v, want %v", rv, got, want)
		}
	}
	c.stop(w)

	// Beyond the history: Gone.
	for i := range historySize {
		src.data["a"] = strconv.Itoa(i)
		c.refresh()
	}
	if _, _, err := c.watch(rv, false); !errors.As(err, new(errGone)) {
		t.Fatalf("watch from a version older than the history: %v", err)
	}
	_, now := c.list()
	if _, _, err := c.watch(now, false); err != nil {
		t.Fatalf("watch from now: %v", err)
	}
}

func TestCollectionDropsSlowWatchers(t *testing.T) {
	var counter atomic.Uint64
	src := &objects{data: map[string]string{}}
	c := newCollection(&counter, src.compute)
	_, rv := c.list()
	w, _, err := c.watch(rv, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range watchBuffer + 1 {
		src.data["x"] = strconv.Itoa(i)
		c.refresh()
	}
	n := 0
	for range w.ch {
		n++
	}
	if n != watchBuffer || !w.closed.Load() {
		t.Fatalf("slow watcher got %d events, closed %v: it must be closed once its buffer is full", n, w.closed.Load())
	}
	c.stop(w) // no double close
	if len(c.watchers) != 0 {
		t.Fatalf("%d watchers left", len(c.watchers))
	}
}

func TestInitialWatchListsCurrentObjects(t *testing.T) {
	var counter atomic.Uint64
	src := &objects{data: map[string]string{"a": "1", "b": "2"}}
	c := newCollection(&counter, src.compute)
	w, current, err := c.watch(0, true)
	if err != nil || len(current) != 2 || len(w.ch) != 0 {
		t.Fatalf("initial watch: %d objects, %d queued, %v", len(current), len(w.ch), err)
	}
	src.data["c"] = "3"
	c.refresh()
	if ch := <-w.ch; ch.typ != watch.Added || objectKey(ch.obj) != "default/c" {
		t.Fatalf("change = %v", ch)
	}
}
