package events

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Ring limits: the newest DefaultRingSize events are kept, none older
// than upstream's default event TTL (the API server's --event-ttl).
const (
	DefaultRingSize = 1000
	DefaultRingTTL  = time.Hour
)

// RingConfig configures a Ring.
type RingConfig struct {
	// NodeName is the events' source host (the reporting instance).
	NodeName string
	// Size bounds the events kept; 0 means DefaultRingSize.
	Size int
	// TTL drops events last seen longer ago; 0 means DefaultRingTTL.
	TTL time.Duration
	// Clock stamps the events; nil means the real clock.
	Clock clock.Clock
	// Scheme finds an object's kind for its reference (as the
	// Broadcaster's); required.
	Scheme *runtime.Scheme
}

// Ring is the standalone node's recorder: it logs each event as
// LogRecorder does and keeps the recent ones as the API server would
// store them (upstream's recorder's names, references, source and
// timestamps; an event repeating an earlier one, same object, type, reason
// and message, raises its count and lastTimestamp, as upstream's
// correlator does). Safe for concurrent use.
type Ring struct {
	cfg    RingConfig
	source v1.EventSource

	mu     sync.Mutex
	events []*v1.Event // oldest first
	// base is each kept event's message without a progress note: a
	// progress update is one more occurrence of the event it annotates.
	base map[*v1.Event]string
	seq  uint64
	// changed is poked (never blocking) after every change.
	changed chan struct{}
}

var _ AnnotatedRecorder = (*Ring)(nil)

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
	return &Ring{cfg: cfg, source: v1.EventSource{Component: "kubelet", Host: cfg.NodeName}, changed: make(chan struct{}, 1),
		base: map[*v1.Event]string{}}
}

// Eventf logs the event and keeps it.
func (r *Ring) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	LogRecorder{}.Eventf(obj, eventtype, reason, messageFmt, args...)
	ref, ok := r.reference(obj)
	if !ok {
		return
	}
	msg := fmt.Sprintf(messageFmt, args...)
	r.record(ref, eventtype, reason, msg, msg)
}

// AnnotatedEventf logs the event as LogRecorder does and keeps it as the
// API server would store it: a progress note (ProgressAnnotation) after the
// message, counted as one more occurrence of the event it annotates.
func (r *Ring) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	LogRecorder{}.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	ref, ok := r.reference(obj)
	if !ok {
		return
	}
	msg := fmt.Sprintf(messageFmt, args...)
	shown := msg
	if note := annotations[ProgressAnnotation]; note != "" {
		shown = progressMessage(msg, note)
	}
	r.record(ref, eventtype, reason, msg, shown)
}

// record keeps one occurrence of the event whose message is message,
// showing shown (message with a progress note, or message itself).
func (r *Ring) record(ref v1.ObjectReference, eventtype, reason, message, shown string) {
	now := r.cfg.Clock.Now()
	t := metav1.NewTime(now)
	r.mu.Lock()
	r.seq++
	rv := strconv.FormatUint(r.seq, 10)
	i := slices.IndexFunc(r.events, func(e *v1.Event) bool {
		return e.InvolvedObject == ref && e.Type == eventtype && e.Reason == reason && r.base[e] == message
	})
	var ev *v1.Event
	if i >= 0 {
		ev = r.events[i]
		r.events = slices.Delete(r.events, i, i+1)
		ev.Count++
		ev.LastTimestamp = t
		ev.Message = shown
	} else {
		namespace := ref.Namespace
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		ev = &v1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ref.Name, now.UnixNano()), Namespace: namespace, CreationTimestamp: t},
			InvolvedObject:      ref,
			Reason:              reason,
			Message:             shown,
			FirstTimestamp:      t,
			LastTimestamp:       t,
			Count:               1,
			Type:                eventtype,
			Source:              r.source,
			ReportingController: r.source.Component,
			ReportingInstance:   r.source.Host,
		}
	}
	ev.ResourceVersion = rv
	r.events = append(r.events, ev)
	r.base[ev] = message
	// Drop what is too old or too much, oldest first.
	drop := 0
	for drop < len(r.events) && (len(r.events)-drop > r.cfg.Size || now.Sub(r.events[drop].LastTimestamp.Time) > r.cfg.TTL) {
		drop++
	}
	for _, e := range r.events[:drop] {
		delete(r.base, e)
	}
	r.events = slices.Delete(r.events, 0, drop)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// List returns copies of the events kept, oldest (by lastTimestamp) first.
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

// reference is the object reference upstream's recorder makes for obj
// (client-go's reference.GetReference, as the Broadcaster's).
func (r *Ring) reference(obj runtime.Object) (v1.ObjectReference, bool) {
	ref, err := reference.GetReference(r.cfg.Scheme, obj)
	if err != nil {
		klog.ErrorS(err, "Could not construct reference, will not keep event", "object", obj)
		return v1.ObjectReference{}, false
	}
	return *ref, true
}
