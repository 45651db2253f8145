package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

type fakeRecorder struct {
	mu      sync.Mutex
	reasons []string
}

var _ events.Recorder = (*fakeRecorder)(nil)

func (r *fakeRecorder) Eventf(_ runtime.Object, eventtype, reason, _ string, _ ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, eventtype+"/"+reason)
}

func (r *fakeRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reasons
	r.reasons = nil
	return out
}

type harness struct {
	t          *testing.T
	client     *fake.Clientset
	clk        *testingclock.FakeClock
	rec        *fakeRecorder
	ctrl       *Controller
	mu         sync.Mutex
	in         Inputs
	registered int
	repeated   int
	wake       chan struct{}
	latest     *Latest
}

func newHarness(t *testing.T, register bool, objects ...runtime.Object) *harness {
	h := &harness{
		t:      t,
		client: fake.NewClientset(objects...),
		clk:    testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rec:    &fakeRecorder{},
		in:     testInputs(),
		wake:   make(chan struct{}, 1),
	}
	h.latest = NewLatest(LocalNode(h.in, h.clk.Now()))
	h.ctrl = New(Config{
		Client:   kubeclienttest.Wrap(h.client),
		NodeName: "node-a",
		Clock:    h.clk,
		Inputs: func(context.Context) (Inputs, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.in, nil
		},
		RegisterNode:      register,
		OnRegistered:      func(*v1.Node) { h.registered++ },
		OnRepeatedFailure: func() { h.repeated++ },
		Recorder:          h.rec,
		Latest:            h.latest,
		Wake:              h.wake,
	})
	return h
}

func (h *harness) setInputs(edit func(*Inputs)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	edit(&h.in)
}

// patches counts the status patches sent so far and forgets them.
func (h *harness) patches() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	h.client.ClearActions()
	return n
}

func (h *harness) serverNode() *v1.Node {
	h.t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("getting the node: %v", err)
	}
	return n
}

func (h *harness) ready() v1.ConditionStatus {
	h.t.Helper()
	return condition(h.t, h.serverNode(), v1.NodeReady).Status
}

func TestControllerRegistersNode(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	if err := h.ctrl.register(ctx); err != nil {
		t.Fatalf("register: %v", err)
	}
	n := h.serverNode()
	if n.Labels[v1.LabelHostname] != "node-a" || n.Labels[v1.LabelOSStable] != "linux" {
		t.Errorf("labels = %v", n.Labels)
	}
	if h.ready() != v1.ConditionTrue {
		t.Errorf("registered node is not Ready: %+v", n.Status.Conditions)
	}
	if q := n.Status.Capacity[v1.ResourceCPU]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("cpu capacity = %v", &q)
	}
	if h.registered != 1 {
		t.Errorf("OnRegistered called %d times, want 1", h.registered)
	}
	if got, ok := h.ctrl.Node(); !ok || got.Name != "node-a" {
		t.Errorf("Node() = %v, %v", got, ok)
	}
	if got := fmt.Sprint(h.rec.take()); got != "[Normal/NodeHasSufficientMemory Normal/NodeHasNoDiskPressure Normal/NodeHasSufficientPID]" {
		t.Errorf("events = %s", got)
	}
	// The status went with the Node: nothing to send right after.
	h.patches()
	h.clk.Step(10 * time.Second)
	if err := h.ctrl.updateStatus(ctx); err != nil {
		t.Fatalf("updateStatus: %v", err)
	}
	if n := h.patches(); n != 0 {
		t.Errorf("%d patches right after registering, want 0", n)
	}
}

func TestControllerReconcilesExistingNode(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid", Labels: map[string]string{
			v1.LabelArchStable: "arm64", "team": "blue",
		}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{"hugepages-32Mi": resource.MustParse("64Mi")},
			Allocatable: v1.ResourceList{"hugepages-32Mi": resource.MustParse("64Mi")},
		},
	}
	h := newHarness(t, true, existing)
	if h.latest.UID() != "" {
		t.Fatalf("Latest has UID %q before registration", h.latest.UID())
	}
	if err := h.ctrl.register(context.Background()); err != nil {
		t.Fatalf("register: %v", err)
	}
	if got := h.latest.Node(); got.UID != "node-uid" || got.Labels["team"] != "blue" {
		t.Errorf("Latest after registration = %s %v, want the API's Node", got.UID, got.Labels)
	}
	n := h.serverNode()
	if n.Labels[v1.LabelArchStable] != "amd64" || n.Labels["team"] != "blue" || n.Labels[v1.LabelHostname] != "node-a" {
		t.Errorf("labels = %v", n.Labels)
	}
	if _, ok := n.Status.Capacity["hugepages-32Mi"]; ok {
		t.Errorf("stale huge page size kept: %v", n.Status.Capacity)
	}
	if h.patches() != 1 || h.registered != 1 || !h.ctrl.registered {
		t.Error("existing node not reconciled with one patch")
	}
}

func TestControllerUpdateStatus(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	if err := h.ctrl.register(ctx); err != nil {
		t.Fatalf("register: %v", err)
	}
	h.patches()
	steps := []struct {
		name    string
		advance time.Duration
		edit    func(*Inputs)
		patches int
		ready   v1.ConditionStatus
	}{
		{name: "unchanged before the report frequency is not sent", advance: 10 * time.Second, patches: 0, ready: v1.ConditionTrue},
		{name: "still unchanged", advance: 4 * time.Minute, patches: 0, ready: v1.ConditionTrue},
		{name: "report frequency passed: sent though unchanged", advance: time.Minute, patches: 1, ready: v1.ConditionTrue},
		{name: "runtime down is sent at once", advance: 10 * time.Second,
			edit: func(in *Inputs) { in.RuntimeErr = errors.New("container runtime is down") }, patches: 1, ready: v1.ConditionFalse},
		{name: "still down, nothing new", advance: 10 * time.Second, patches: 0, ready: v1.ConditionFalse},
		{name: "new images are sent", advance: 10 * time.Second,
			edit: func(in *Inputs) { in.Images = []v1.ContainerImage{{Names: []string{"busybox"}, SizeBytes: 1}} }, patches: 1, ready: v1.ConditionFalse},
		{name: "runtime back", advance: 10 * time.Second,
			edit: func(in *Inputs) { in.RuntimeErr = nil }, patches: 1, ready: v1.ConditionTrue},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			h.clk.Step(s.advance)
			if s.edit != nil {
				h.setInputs(s.edit)
			}
			if err := h.ctrl.updateStatus(ctx); err != nil {
				t.Fatalf("updateStatus: %v", err)
			}
			if n := h.patches(); n != s.patches {
				t.Errorf("%d patches, want %d", n, s.patches)
			}
			if got := h.ready(); got != s.ready {
				t.Errorf("Ready = %s, want %s", got, s.ready)
			}
		})
	}
	if got := fmt.Sprint(h.rec.take()); got != "[Normal/NodeHasSufficientMemory Normal/NodeHasNoDiskPressure Normal/NodeHasSufficientPID Normal/NodeNotReady Normal/NodeReady]" {
		t.Errorf("events = %s", got)
	}
}

func TestControllerFastPath(t *testing.T) {
	tests := []struct {
		name     string
		advance  time.Duration
		heal     bool
		patches  int
		ready    v1.ConditionStatus
		fastDone bool
		reported bool
	}{
		{name: "still not ready: nothing sent", heal: false, patches: 0, ready: v1.ConditionFalse},
		{name: "became ready: sent at once", heal: true, patches: 1, ready: v1.ConditionTrue, fastDone: true, reported: true},
		{name: "grace period over: gives up without sending", advance: 121 * time.Second, heal: true, patches: 0, ready: v1.ConditionFalse, fastDone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			ctx := context.Background()
			h.setInputs(func(in *Inputs) {
				in.NetworkErr = errors.New("container runtime network not ready: NetworkReady=false")
			})
			start := h.clk.Now()
			if err := h.ctrl.register(ctx); err != nil {
				t.Fatalf("register: %v", err)
			}
			registeredAt := h.ctrl.lastReport
			h.patches()
			if tc.heal {
				h.setInputs(func(in *Inputs) { in.NetworkErr = nil })
			}
			h.clk.Step(100*time.Millisecond + tc.advance)
			h.ctrl.fastUpdate(ctx, start)
			if n := h.patches(); n != tc.patches {
				t.Errorf("%d patches, want %d", n, tc.patches)
			}
			if got := h.ready(); got != tc.ready {
				t.Errorf("Ready = %s, want %s", got, tc.ready)
			}
			if h.ctrl.fastDone != tc.fastDone {
				t.Errorf("fastDone = %v, want %v", h.ctrl.fastDone, tc.fastDone)
			}
			if reported := h.ctrl.lastReport != registeredAt; reported != tc.reported {
				t.Errorf("lastReport moved = %v, want %v", reported, tc.reported)
			}
		})
	}
}

func TestControllerRetriesFailedUpdates(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		wantErr  bool
		patches  int
		repeated int
	}{
		{name: "first attempt works", failures: 0, patches: 1},
		{name: "two conflicts then success", failures: 2, patches: 3, repeated: 1},
		{name: "gives up after five attempts", failures: 10, wantErr: true, patches: 5, repeated: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			ctx := context.Background()
			if err := h.ctrl.register(ctx); err != nil {
				t.Fatalf("register: %v", err)
			}
			h.patches()
			failures := tc.failures
			h.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failures == 0 {
					return false, nil, nil
				}
				failures--
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "node-a", errors.New("changed"))
			})
			h.setInputs(func(in *Inputs) { in.PIDPressure = true })
			err := h.ctrl.updateStatus(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("updateStatus error = %v, want error %v", err, tc.wantErr)
			}
			if n := h.patches(); n != tc.patches {
				t.Errorf("%d patch attempts, want %d", n, tc.patches)
			}
			if h.repeated != tc.repeated {
				t.Errorf("OnRepeatedFailure called %d times, want %d", h.repeated, tc.repeated)
			}
		})
	}
}

func TestControllerNodeGone(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	if err := h.ctrl.register(ctx); err != nil {
		t.Fatalf("register: %v", err)
	}
	if err := h.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := h.ctrl.updateStatus(ctx)
	if !errors.Is(err, errNodeGone) || !apierrors.IsNotFound(err) {
		t.Fatalf("updateStatus error = %v, want node gone", err)
	}
	if h.ctrl.registered {
		t.Fatal("still considered registered")
	}
	if err := h.ctrl.register(ctx); err != nil {
		t.Fatalf("register again: %v", err)
	}
	if h.serverNode().Name != "node-a" || h.registered != 2 {
		t.Errorf("not registered again (OnRegistered %d)", h.registered)
	}
}

func TestControllerWithoutRegistration(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	h := newHarness(t, false, existing)
	ctx := context.Background()
	if err := h.ctrl.updateStatus(ctx); err != nil {
		t.Fatalf("updateStatus: %v", err)
	}
	n := h.serverNode()
	if n.Labels[v1.LabelOSStable] != "linux" || h.ready() != v1.ConditionTrue {
		t.Errorf("status not updated: labels %v", n.Labels)
	}
	if err := h.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.ctrl.updateStatus(ctx); err == nil {
		t.Error("updateStatus of a missing node succeeded")
	}
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "create" {
			t.Errorf("created a node though RegisterNode is false: %v", a)
		}
	}
}

func TestControllerSchedulableEvents(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	if err := h.ctrl.register(ctx); err != nil {
		t.Fatalf("register: %v", err)
	}
	if err := h.ctrl.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	h.rec.take()
	n := h.serverNode()
	n.Spec.Unschedulable = true
	if _, err := h.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.ctrl.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(h.rec.take()); got != "[Normal/NodeNotSchedulable]" {
		t.Errorf("events = %s", got)
	}
	if err := h.ctrl.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.rec.take(); len(got) != 0 {
		t.Errorf("events repeated: %v", got)
	}
}

func TestControllerRunReregistersOnWake(t *testing.T) {
	h := newHarness(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := h.client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func(want watch.EventType) {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want {
				t.Fatalf("watch event %s, want %s", ev.Type, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ctrl.Run(ctx)
	}()
	next(watch.Added)
	if err := h.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next(watch.Deleted)
	h.wake <- struct{}{}
	next(watch.Added)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// TestControllerRegistrationRetryWakesOnWake: a registration that failed
// (no credentials yet during TLS bootstrap) is retried at once on Wake
// rather than at the end of its back-off.
func TestControllerRegistrationRetryWakesOnWake(t *testing.T) {
	h := newHarness(t, true)
	var fail sync.Mutex
	failing := true
	h.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		fail.Lock()
		defer fail.Unlock()
		if failing {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "node-a", errors.New("anonymous"))
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := h.client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go h.ctrl.Run(ctx)
	// Wait until the first attempt failed and it sleeps its back-off; the
	// fake clock never moves, so only a Wake can end it.
	for !h.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	h.wake <- struct{}{}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added {
			t.Fatalf("watch event %s, want ADDED", ev.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Node was not registered after Wake")
	}
}

// With an external cloud provider the Node registers tainted and annotated;
// once the cloud controller manager set the addresses and providerID and
// removed the taint, the kubelet's status updates leave all three alone.
func TestControllerExternalCloudProvider(t *testing.T) {
	h := newHarness(t, true)
	h.setInputs(func(in *Inputs) {
		in.ExternalCloudProvider = true
		in.NodeIPFlag = []string{"10.0.0.5"}
	})
	ctx := context.Background()
	if err := h.ctrl.register(ctx); err != nil {
		t.Fatalf("register: %v", err)
	}
	n := h.serverNode()
	if !hasTaint(n.Spec.Taints, TaintExternalCloudProvider, v1.TaintEffectNoSchedule) || n.Annotations[AnnotationProvidedNodeIP] != "10.0.0.5" {
		t.Fatalf("registered node: taints %v annotations %v", n.Spec.Taints, n.Annotations)
	}
	// The cloud controller manager initialises the node.
	n.Spec.Taints = nil
	n.Spec.ProviderID = "gce://proj/zone/inst"
	ccm := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.99"}, {Type: v1.NodeHostName, Address: "inst"}}
	n.Status.Addresses = ccm
	if _, err := h.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		h.clk.Step(6 * time.Minute) // past the report frequency: a patch goes out
		h.setInputs(func(in *Inputs) {
			in.Images = append(in.Images, v1.ContainerImage{Names: []string{fmt.Sprint(i)}, SizeBytes: 1})
		})
		if err := h.ctrl.updateStatus(ctx); err != nil {
			t.Fatalf("updateStatus: %v", err)
		}
		if h.patches() != 1 {
			t.Fatal("no status update sent")
		}
	}
	n = h.serverNode()
	if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(ccm) || n.Spec.ProviderID != "gce://proj/zone/inst" || len(n.Spec.Taints) != 0 {
		t.Errorf("after status updates: addresses %v providerID %q taints %v", n.Status.Addresses, n.Spec.ProviderID, n.Spec.Taints)
	}
	if n.Annotations[AnnotationProvidedNodeIP] != "10.0.0.5" {
		t.Errorf("annotation lost: %v", n.Annotations)
	}
}
