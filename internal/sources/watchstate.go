package sources

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"
)

// WatchState records whether the API source's pod watch is open, and
// since when. A reader that trusts the watched pods (the status manager's
// resync compares its statuses with them) trusts them only while a watch
// has been open for a while: while the API server is away, and until the
// reflector's back-off lets it watch again (up to a minute after the API
// server returns), the watched copies miss what others wrote meanwhile,
// such as the node controller marking the pods not Ready.
type WatchState struct {
	clock clock.PassiveClock

	mu    sync.Mutex
	open  uint64 // id of the open watch, 0 while none is
	next  uint64
	since time.Time
}

// NewWatchState returns a state with no watch open; clk stamps the opens.
func NewWatchState(clk clock.PassiveClock) *WatchState {
	return &WatchState{clock: clk}
}

// OpenSince returns when the watch now open was opened; false while no
// watch is open.
func (s *WatchState) OpenSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since, s.open != 0
}

func (s *WatchState) opened() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.open, s.since = s.next, s.clock.Now()
	return s.open
}

// closed ends watch id; a late close of an older watch changes nothing.
func (s *WatchState) closed(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == id {
		s.open = 0
	}
}

// trackedListWatch is a ListerWatcher that reports its watches to a
// WatchState.
type trackedListWatch struct {
	cache.ListerWatcherWithContext
	state *WatchState
}

var (
	_ cache.ListerWatcherWithContext = trackedListWatch{}
	_ cache.ListerWatcher            = trackedListWatch{}
)

// List and Watch are the reflector's entry points without a context; it
// calls the WithContext ones.
func (t trackedListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), opts)
}

func (t trackedListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return t.WatchWithContext(context.Background(), opts)
}

func (t trackedListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := t.ListerWatcherWithContext.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	id := t.state.opened()
	return newTrackedWatch(w, func() { t.state.closed(id) }), nil
}

// IsWatchListSemanticsUnSupported keeps what the wrapped client says
// about watch-list semantics (client-go's watchlist package asks).
func (t trackedListWatch) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(t.ListerWatcherWithContext)
}

// trackedWatch passes a watch's events on and calls closed once the watch
// ends or reports an error.
type trackedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newTrackedWatch(inner watch.Interface, closed func()) *trackedWatch {
	w := &trackedWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		defer closed()
		for ev := range inner.ResultChan() {
			if ev.Type == watch.Error {
				closed()
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *trackedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *trackedWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.inner.Stop()
}
