package events

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/smp"
)

// Ring limits: the newest DefaultRingSize events are kept, none older
// than upstream's default event TTL (the API server's --event-ttl).
const (
	DefaultRingSize = 1000
	DefaultRingTTL  = time.Hour
)

// RingConfig configures a Ring.
type RingConfig struct {
	// Size bounds the events kept; 0 means DefaultRingSize.
	Size int
	// TTL drops events last seen longer ago; 0 means DefaultRingTTL.
	TTL time.Duration
	// Clock ages the events for TTL; nil means the real clock.
	Clock clock.Clock
}

// Ring is the standalone node's event store: the Sink a Broadcaster
// writes to in place of the API server. It keeps what the Broadcaster
// creates and patches (so events are named, correlated, spam-filtered and
// counted exactly as in cluster mode), as the API server would store them,
// bounded in number and age. Safe for concurrent use.
type Ring struct {
	cfg RingConfig

	mu     sync.Mutex
	events []*v1.Event // oldest write first
	seq    uint64
	// changed is poked (never blocking) after every change.
	changed chan struct{}
}

var _ Sink = (*Ring)(nil)

// NewRing returns an empty Ring.
func NewRing(cfg RingConfig) *Ring {
	if cfg.Size <= 0 {
		cfg.Size = DefaultRingSize
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultRingTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Ring{cfg: cfg, changed: make(chan struct{}, 1)}
}

var eventsResource = schema.GroupResource{Resource: "events"}

// Create keeps e, as the API server's create would: serialised (times to
// the second), AlreadyExists for a name taken in its namespace.
func (r *Ring) Create(e *v1.Event) (*v1.Event, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	stored := &v1.Event{}
	if err := json.Unmarshal(data, stored); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.find(e.Namespace, e.Name) >= 0 {
		return nil, apierrors.NewAlreadyExists(eventsResource, e.Name)
	}
	stored.CreationTimestamp = stored.FirstTimestamp
	if stored.CreationTimestamp.IsZero() {
		stored.CreationTimestamp.Time = r.cfg.Clock.Now()
	}
	r.keep(stored)
	return stored.DeepCopy(), nil
}

// Patch applies the Broadcaster's strategic merge patch (a repeat's count,
// lastTimestamp and message) to the event e names; NotFound when it is no
// longer kept, which makes the Broadcaster create it again.
func (r *Ring) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.find(e.Namespace, e.Name)
	if i < 0 {
		return nil, apierrors.NewNotFound(eventsResource, e.Name)
	}
	current, err := json.Marshal(r.events[i])
	if err != nil {
		return nil, err
	}
	patched, err := smp.StrategicMergePatch(current, data, &v1.Event{})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	stored := &v1.Event{}
	if err := json.Unmarshal(patched, stored); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	r.events = slices.Delete(r.events, i, i+1)
	r.keep(stored)
	return stored.DeepCopy(), nil
}

// find is the index of the kept event namespace/name, or -1. r.mu is held.
func (r *Ring) find(namespace, name string) int {
	return slices.IndexFunc(r.events, func(e *v1.Event) bool { return e.Namespace == namespace && e.Name == name })
}

// keep appends e with the next resource version, drops what is too old or
// too much (oldest first) and pokes Changed. r.mu is held.
func (r *Ring) keep(e *v1.Event) {
	r.seq++
	e.ResourceVersion = strconv.FormatUint(r.seq, 10)
	r.events = append(r.events, e)
	now := r.cfg.Clock.Now()
	drop := 0
	for drop < len(r.events) && (len(r.events)-drop > r.cfg.Size || now.Sub(r.events[drop].LastTimestamp.Time) > r.cfg.TTL) {
		drop++
	}
	r.events = slices.Delete(r.events, 0, drop)
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// List returns copies of the events kept, the least recently written first.
func (r *Ring) List() []v1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]v1.Event, 0, len(r.events))
	for _, e := range r.events {
		out = append(out, *e.DeepCopy())
	}
	return out
}

// Changed is poked after every change (one pending poke at most).
func (r *Ring) Changed() <-chan struct{} { return r.changed }
