package kubeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/seed-kubelet/kubelet/internal/events"
)

// NewEventBroadcaster returns a broadcaster that writes events through core
// (EventSink), with client-go's correlation and spam filtering except that
// progress updates have a spam budget of their own (events.SpamKey). It
// stops when ctx ends.
func NewEventBroadcaster(ctx context.Context, core CoreV1Interface) record.EventBroadcaster {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: events.SpamKey}))
	b.StartRecordingToSink(EventSink{Core: core})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b
}

// EventSink writes a record.EventBroadcaster's events through core, each in
// its own event's namespace (client-go's EventSinkImpl over Events("")). An
// event's progress note (events.ProgressAnnotation) is written after its
// message, never as an annotation.
type EventSink struct {
	Core CoreV1Interface
}

var _ record.EventSink = EventSink{}

// Create posts a new event.
func (s EventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	e = events.WithProgressNote(e)
	return s.Core.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

// Update replaces an event; its ResourceVersion must be set.
func (s EventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	e = events.WithProgressNote(e)
	return s.Core.Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

// Patch applies the broadcaster's strategic merge patch (count, last
// timestamp, message) to an existing event.
func (s EventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	data = events.ProgressPatch(e, data)
	return s.Core.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
