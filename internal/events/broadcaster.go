package events

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Upstream's broadcaster numbers (client-go tools/record).
const (
	// MaxTries writes of one event before it is given up.
	MaxTries = 12
	// DefaultRetrySleep between writes; the first retry sleeps a random
	// fraction of it, so many kubelets do not retry in step.
	DefaultRetrySleep = 10 * time.Second
	// DefaultQueueLength events wait to be written; more are dropped.
	DefaultQueueLength = 1000
	// LogVerbosity of the "Event occurred" line every event gets (the
	// kubelet's StartStructuredLogging(3)).
	LogVerbosity = 3
)

// Sink writes events to the API server; kubeclient.EventSink is one.
type Sink interface {
	Create(e *v1.Event) (*v1.Event, error)
	Patch(e *v1.Event, data []byte) (*v1.Event, error)
}

// BroadcasterConfig configures a Broadcaster.
type BroadcasterConfig struct {
	Sink   Sink            // required
	Scheme *runtime.Scheme // required: finds an object's kind for its reference
	Clock  clock.Clock     // required: event times, spam buckets, retry sleeps
	// Source names the reporter (component "kubelet", host the node name).
	Source v1.EventSource
	// RetrySleep between writes of one event; DefaultRetrySleep if zero.
	RetrySleep time.Duration
	// QueueLength of events waiting to be written; DefaultQueueLength if zero.
	QueueLength int
	// Jitter returns a number in [0, 1) scaling the first retry's sleep;
	// math/rand if nil.
	Jitter func() float64
}

// Broadcaster records events to the API server in the background, as
// client-go's broadcaster with StartRecordingToSink and
// StartStructuredLogging does: Eventf never blocks (a full queue drops the
// event with a log line), Run writes them through a Correlator, retrying
// transient errors.
type Broadcaster struct {
	cfg        BroadcasterConfig
	correlator *Correlator
	queue      chan queued
	stopped    chan struct{}
}

// queued is an event to write, or an object whose correlator entries are
// to be forgotten once the events queued before have been written.
type queued struct {
	event  *v1.Event
	forget types.UID
}

var _ Recorder = (*Broadcaster)(nil)

// NewBroadcaster returns a broadcaster; call Run to write events.
func NewBroadcaster(cfg BroadcasterConfig) *Broadcaster {
	if cfg.RetrySleep == 0 {
		cfg.RetrySleep = DefaultRetrySleep
	}
	if cfg.QueueLength == 0 {
		cfg.QueueLength = DefaultQueueLength
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	return &Broadcaster{cfg: cfg, correlator: NewCorrelator(cfg.Clock), queue: make(chan queued, cfg.QueueLength), stopped: make(chan struct{})}
}

// Eventf queues an event about obj (a typed object of the scheme or an
// *v1.ObjectReference). It logs the event at LogVerbosity.
func (b *Broadcaster) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	b.record(obj, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf is Eventf with annotations on the event (the eviction
// manager's starved_resource and friends).
func (b *Broadcaster) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	b.record(obj, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (b *Broadcaster) record(obj runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	ref, err := reference.GetReference(b.cfg.Scheme, obj)
	if err != nil {
		klog.ErrorS(err, "Could not construct reference, will not report event", "object", obj, "eventType", eventtype, "reason", reason, "message", message)
		return
	}
	if !util.ValidateEventType(eventtype) {
		klog.ErrorS(nil, "Unsupported event type", "eventType", eventtype)
		return
	}
	e := b.makeEvent(ref, annotations, eventtype, reason, message)
	klog.V(LogVerbosity).InfoS("Event occurred", "object", klog.KRef(ref.Namespace, ref.Name), "fieldPath", ref.FieldPath, "kind", ref.Kind, "apiVersion", ref.APIVersion, "type", eventtype, "reason", reason, "message", message)
	select {
	case <-b.stopped:
		klog.ErrorS(errors.New("the event broadcaster is shut down"), "Unable to record event (will not retry!)")
		return
	default:
	}
	select {
	case b.queue <- queued{event: e}:
	default:
		klog.ErrorS(nil, "Unable to record event: too many queued events, dropped event", "event", e)
	}
}

// makeEvent is a new event about ref, named <object>.<hex nanoseconds>.
func (b *Broadcaster) makeEvent(ref *v1.ObjectReference, annotations map[string]string, eventtype, reason, message string) *v1.Event {
	now := metav1.NewTime(b.cfg.Clock.Now())
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: ns, Annotations: annotations},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventtype,
		Source:              b.cfg.Source,
		ReportingController: b.cfg.Source.Component,
		ReportingInstance:   b.cfg.Source.Host,
	}
}

// Forget has the correlator drop what it holds about the object uid (a pod
// that is gone), after the events about it already queued are written. A
// full queue drops the request; the entries then wait for eviction, as
// upstream's always do.
func (b *Broadcaster) Forget(uid types.UID) {
	select {
	case b.queue <- queued{forget: uid}:
	default:
		klog.V(4).InfoS("Event queue full; the correlator keeps the entries of a removed object until they are evicted", "uid", uid)
	}
}

// Run writes queued events until ctx ends; events still queued then are
// dropped, as upstream's broadcaster does on shutdown.
func (b *Broadcaster) Run(ctx context.Context) {
	defer close(b.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-b.queue:
			if q.event == nil {
				b.correlator.Forget(q.forget)
				continue
			}
			b.write(ctx, q.event)
		}
	}
}

// write correlates e and writes it, up to MaxTries times.
func (b *Broadcaster) write(ctx context.Context, e *v1.Event) {
	c, err := b.correlator.Correlate(e)
	if err != nil {
		klog.ErrorS(err, "Could not correlate event", "event", e)
	}
	if c.Skip {
		return
	}
	for tries := 1; ; tries++ {
		if b.writeOnce(c.Event, c.Patch) {
			return
		}
		if tries >= MaxTries {
			klog.ErrorS(nil, "Unable to write event (retry limit exceeded!)", "event", e)
			return
		}
		delay := b.cfg.RetrySleep
		if tries == 1 {
			delay = time.Duration(float64(delay) * b.cfg.Jitter())
		}
		select {
		case <-ctx.Done():
			klog.ErrorS(nil, "Unable to write event (broadcaster is shut down)", "event", e)
			return
		case <-b.cfg.Clock.After(delay):
		}
	}
}

// writeOnce creates e, or patches it for a repeat (creating it if the API
// lost it); it reports false only for errors worth retrying.
func (b *Broadcaster) writeOnce(e *v1.Event, patch []byte) bool {
	var written *v1.Event
	var err error
	repeat := e.Count > 1
	if repeat {
		// A progress note goes after the message, never in an annotation.
		written, err = b.cfg.Sink.Patch(e, ProgressPatch(e, patch))
	}
	if !repeat || util.IsKeyNotFoundError(err) {
		e.ResourceVersion = ""
		written, err = b.cfg.Sink.Create(WithProgressNote(e))
	}
	if err == nil {
		if written.Message != e.Message {
			// The correlator knows the event by its message without the
			// progress note: later updates are occurrences of the same.
			w := *written
			w.Message = e.Message
			written = &w
		}
		b.correlator.UpdateState(written)
		return true
	}
	var construction *restclient.RequestConstructionError
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &construction):
		klog.ErrorS(err, "Unable to construct event (will not retry!)", "event", e)
		return true
	case errors.As(err, &status):
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			klog.V(5).InfoS("Server rejected event (will not retry!)", "event", e, "err", err)
		} else {
			klog.ErrorS(err, "Server rejected event (will not retry!)", "event", e)
		}
		return true
	}
	klog.ErrorS(err, "Unable to write event (may retry after sleeping)", "event", e)
	return false
}
