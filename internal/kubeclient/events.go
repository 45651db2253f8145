package kubeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventSink writes the event broadcaster's events (events.Sink) through
// core, each in its own event's namespace (client-go's EventSinkImpl over
// Events("")).
type EventSink struct {
	Core CoreV1Interface
}

// Create posts a new event.
func (s EventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.Core.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

// Patch applies the broadcaster's strategic merge patch (count, last
// timestamp, message) to an existing event.
func (s EventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Core.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
