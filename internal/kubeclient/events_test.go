package kubeclient_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

// Progress updates of a pull are one event in the API, its count and
// message updated, through the broadcaster and its correlator writing with
// EventSink.
func TestProgressUpdatesOneEvent(t *testing.T) {
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := events.NewBroadcaster(events.BroadcasterConfig{
		Sink: kubeclient.EventSink{Core: kubeclienttest.Wrap(cs).CoreV1()}, Scheme: kubeclient.Scheme, Clock: clock.RealClock{},
		Source: corev1.EventSource{Component: "kubelet", Host: "n1"},
	})
	go rec.Run(ctx)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}

	rec.Eventf(pod, corev1.EventTypeNormal, events.Pulling, "Pulling image %q", "big:1")
	waitEvents(t, cs, func(evs []corev1.Event) error {
		if len(evs) != 1 || evs[0].Count != 1 {
			return fmt.Errorf("want the Pulling event, got %d events", len(evs))
		}
		return nil
	})
	// More than client-go's spam burst (25 per object) of updates: they
	// have their own budget, so Pulled still gets through.
	for i := 1; i <= 30; i++ {
		events.Progressf(rec, pod, corev1.EventTypeNormal, events.Pulling, fmt.Sprintf("%d MiB of 40 MiB", i), "Pulling image %q", "big:1")
	}
	rec.Eventf(pod, corev1.EventTypeNormal, events.Pulled, "Successfully pulled image %q", "big:1")
	evs := waitEvents(t, cs, func(evs []corev1.Event) error {
		if len(evs) != 2 {
			return fmt.Errorf("want Pulling and Pulled, got %d events", len(evs))
		}
		return nil
	})
	var pulling corev1.Event
	for _, e := range evs {
		if e.Reason == events.Pulling {
			pulling = e
		}
	}
	// 25 updates fit their burst; the rest are dropped by the spam filter,
	// as any event over budget.
	if pulling.Count != 26 || pulling.Message != `Pulling image "big:1": 25 MiB of 40 MiB` {
		t.Errorf("Pulling event count %d message %q, want 26 and the 25th update", pulling.Count, pulling.Message)
	}
	if _, ok := pulling.Annotations[events.ProgressAnnotation]; ok {
		t.Errorf("the progress annotation was stored: %v", pulling.Annotations)
	}
}

func waitEvents(t *testing.T, cs *fake.Clientset, check func([]corev1.Event) error) []corev1.Event {
	t.Helper()
	var got []corev1.Event
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got, last = l.Items, check(l.Items)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("events: %v (%v)", last, err)
	}
	return got
}
