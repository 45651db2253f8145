package statusmanager

import (
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) Eventf(_ runtime.Object, eventtype, reason, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, eventtype+" "+reason)
}

func TestTargets(t *testing.T) {
	pods := podmanager.NewManager()
	statuses := NewManager(nil)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &eventLog{}
	tg := NewTargets(TargetsConfig{Pods: pods, Statuses: statuses, Recorder: rec, Clock: clk})

	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "api", Name: "web", Namespace: "ns", Annotations: map[string]string{"kubernetes.io/config.source": "api"}}}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "static", Name: "etcd-n", Namespace: "kube-system",
		Annotations: map[string]string{podutil.ConfigSourceAnnotationKey: "file", podutil.ConfigHashAnnotationKey: "static"}}}
	pods.AddOrUpdate(api)
	pods.AddOrUpdate(static)

	if got, ok := tg.Target("api"); !ok || got != (Target{Namespace: "ns", Name: "web", UID: "api"}) {
		t.Errorf("API pod: target %+v %v", got, ok)
	}
	if _, ok := tg.Target("static"); ok {
		t.Error("static pod without a mirror pod has a target")
	}
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "mirror", Name: "etcd-n", Namespace: "kube-system",
		Annotations: map[string]string{podutil.ConfigMirrorAnnotationKey: "static"}}}
	pods.AddOrUpdate(mirror)
	if got, ok := tg.Target("static"); !ok || got.UID != "mirror" {
		t.Errorf("static pod: target %+v %v, want its mirror pod", got, ok)
	}
	if _, ok := tg.Target("unknown"); ok {
		t.Error("unknown pod has a target")
	}
	// What the API holds: the pod manager's latest copy, or the mirror pod's.
	mirror.Status.Message, api.Status.Message = "mirror's", "api's"
	if st, obj, ok := tg.Reported(static); !ok || obj != "mirror" || st.Message != "mirror's" {
		t.Errorf("static pod: reported %q on %q %v, want the mirror pod's", st.Message, obj, ok)
	}
	if st, obj, ok := tg.Reported(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "api"}}); !ok || obj != "api" || st.Message != "api's" {
		t.Errorf("API pod: reported %q on %q %v, want the pod manager's copy", st.Message, obj, ok)
	}
	// A mirror pod of an older version of the static pod is no target.
	stale := mirror.DeepCopy()
	stale.Annotations[podutil.ConfigMirrorAnnotationKey] = "older"
	pods.AddOrUpdate(stale)
	if got, ok := tg.Target("static"); ok {
		t.Errorf("static pod: target %+v, a mirror pod of another version", got)
	}
	if _, _, ok := tg.Reported(static); ok {
		t.Error("static pod: reported the status of a mirror pod of another version")
	}

	rejected := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "rej", Name: "big", Namespace: "ns"}}
	tg.Reject(rejected, "OutOfmemory", "Node didn't have enough resource: memory")
	if got, ok := tg.Target("rej"); !ok || got.Name != "big" {
		t.Errorf("rejected pod: target %+v %v", got, ok)
	}
	st, _ := statuses.Get("rej")
	if st.Phase != v1.PodFailed || st.Reason != "OutOfmemory" || st.StartTime == nil || !st.StartTime.Time.Equal(clk.Now()) {
		t.Errorf("rejected status = %+v", st)
	}
	if len(rec.events) != 1 || rec.events[0] != "Warning OutOfmemory" {
		t.Errorf("events = %v", rec.events)
	}
}
