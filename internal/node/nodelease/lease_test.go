package nodelease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

type harness struct {
	t      *testing.T
	client *fake.Clientset
	clk    *testingclock.FakeClock
	ctrl   *Controller
	mu     sync.Mutex
	uid    types.UID
}

func newHarness(t *testing.T, uid types.UID) *harness {
	h := &harness{
		t:      t,
		client: fake.NewClientset(),
		clk:    testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		uid:    uid,
	}
	h.ctrl = New(Config{
		Client:               kubeclienttest.Wrap(h.client),
		NodeName:             "node-a",
		Clock:                h.clk,
		LeaseDurationSeconds: 40,
		NodeUID: func() types.UID {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.uid
		},
	})
	h.ctrl.jitter = func() float64 { return 0 }
	return h
}

func (h *harness) setUID(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.uid = uid
}

func (h *harness) lease() (*coordinationv1.Lease, error) {
	return h.client.CoordinationV1().Leases(Namespace).Get(context.Background(), "node-a", metav1.GetOptions{})
}

func (h *harness) mustLease() *coordinationv1.Lease {
	h.t.Helper()
	l, err := h.lease()
	if err != nil {
		h.t.Fatalf("getting the lease: %v", err)
	}
	return l
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name     string
		duration int32
		renew    time.Duration
		want     time.Duration
	}{
		{name: "quarter of the default duration", want: 10 * time.Second},
		{name: "quarter of a given duration", duration: 60, want: 15 * time.Second},
		{name: "given interval", duration: 40, renew: 3 * time.Second, want: 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Client: kubeclienttest.Wrap(fake.NewClientset()), NodeName: "n", LeaseDurationSeconds: tc.duration, RenewInterval: tc.renew})
			if c.cfg.RenewInterval != tc.want {
				t.Errorf("renew interval = %v, want %v", c.cfg.RenewInterval, tc.want)
			}
		})
	}
}

func TestLeaseObjects(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		lease     *coordinationv1.Lease
		uid       types.UID
		wantOwner types.UID
	}{
		{name: "new with owner", lease: nil, uid: "uid-1", wantOwner: "uid-1"},
		{name: "new without owner", lease: nil, uid: ""},
		{name: "renewed gains an owner", lease: NewLease("node-a", 40, "", now.Add(-time.Minute)), uid: "uid-1", wantOwner: "uid-1"},
		{name: "renewed keeps its owner", lease: NewLease("node-a", 40, "uid-0", now.Add(-time.Minute)), uid: "uid-1", wantOwner: "uid-0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *coordinationv1.Lease
			if tc.lease == nil {
				got = NewLease("node-a", 40, tc.uid, now)
			} else {
				got = Renewed(tc.lease, "node-a", tc.uid, now)
				if tc.lease.Spec.RenewTime.Time.Equal(now) {
					t.Error("Renewed changed its input")
				}
			}
			if got.Name != "node-a" || got.Namespace != "kube-node-lease" || *got.Spec.HolderIdentity != "node-a" ||
				*got.Spec.LeaseDurationSeconds != 40 || !got.Spec.RenewTime.Time.Equal(now) {
				t.Errorf("lease = %+v", got)
			}
			switch {
			case tc.wantOwner == "" && len(got.OwnerReferences) != 0:
				t.Errorf("owner references = %+v, want none", got.OwnerReferences)
			case tc.wantOwner != "":
				want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: tc.wantOwner}
				if len(got.OwnerReferences) != 1 || got.OwnerReferences[0] != want {
					t.Errorf("owner references = %+v, want %+v", got.OwnerReferences, want)
				}
			}
		})
	}
}

func TestSync(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	steps := []struct {
		name  string
		do    func()
		check func(*testing.T)
	}{
		{name: "not created while the node's UID is unknown",
			check: func(t *testing.T) {
				if _, err := h.lease(); !apierrors.IsNotFound(err) {
					t.Errorf("lease exists (%v) before the node is known", err)
				}
			}},
		{name: "created with the owner reference once known",
			do: func() { h.setUID("uid-1") },
			check: func(t *testing.T) {
				l := h.mustLease()
				if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "uid-1" || l.OwnerReferences[0].Kind != "Node" {
					t.Errorf("owner references = %+v", l.OwnerReferences)
				}
				if !l.Spec.RenewTime.Time.Equal(h.clk.Now()) || *l.Spec.HolderIdentity != "node-a" || *l.Spec.LeaseDurationSeconds != 40 {
					t.Errorf("lease spec = %+v", l.Spec)
				}
			}},
		{name: "renewed without reading it first",
			do: func() { h.clk.Step(10 * time.Second); h.client.ClearActions() },
			check: func(t *testing.T) {
				if l := h.mustLease(); !l.Spec.RenewTime.Time.Equal(h.clk.Now()) {
					t.Errorf("renew time = %v, want %v", l.Spec.RenewTime.Time, h.clk.Now())
				}
				verbs := actionVerbs(h.client.Actions())
				if len(verbs) != 2 || verbs[0] != "update" { // update, then the test's own get
					t.Errorf("actions = %v, want a single update", verbs)
				}
			}},
		{name: "recreated after deletion",
			do: func() {
				if err := h.client.CoordinationV1().Leases(Namespace).Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				h.clk.Step(10 * time.Second)
			},
			check: func(t *testing.T) {
				l := h.mustLease()
				if !l.Spec.RenewTime.Time.Equal(h.clk.Now()) || len(l.OwnerReferences) != 1 {
					t.Errorf("recreated lease = %+v", l)
				}
			}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.do != nil {
				s.do()
			}
			h.ctrl.sync(ctx)
			s.check(t)
		})
	}
}

func actionVerbs(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.GetVerb())
	}
	return out
}

func TestSyncWithoutNodeUIDFunc(t *testing.T) {
	client := fake.NewClientset()
	c := New(Config{Client: kubeclienttest.Wrap(client), NodeName: "node-a", Clock: testingclock.NewFakeClock(time.Unix(100, 0))})
	c.sync(context.Background())
	l, err := client.CoordinationV1().Leases(Namespace).Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease not created: %v", err)
	}
	if len(l.OwnerReferences) != 0 {
		t.Errorf("owner references = %+v, want none", l.OwnerReferences)
	}
}

func TestRenewConflictReadsAgain(t *testing.T) {
	h := newHarness(t, "uid-1")
	ctx := context.Background()
	h.ctrl.sync(ctx)
	// Someone else wrote the lease: our copy is stale.
	other := h.mustLease()
	other.Labels = map[string]string{"touched": "yes"}
	if _, err := h.client.CoordinationV1().Leases(Namespace).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	h.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "node-a", errors.New("stale"))
	})
	h.clk.Step(10 * time.Second)
	h.ctrl.sync(ctx)
	l := h.mustLease()
	if !l.Spec.RenewTime.Time.Equal(h.clk.Now()) || l.Labels["touched"] != "yes" {
		t.Errorf("lease after conflict = %+v", l)
	}
}

func TestRunBacksOffAndRenews(t *testing.T) {
	h := newHarness(t, "uid-1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The API server fails the first two reads.
	failures := 2
	var mu sync.Mutex
	h.client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
	})
	w, err := h.client.CoordinationV1().Leases(Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func(want watch.EventType) *coordinationv1.Lease {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want {
				t.Fatalf("watch event %s, want %s", ev.Type, want)
			}
			return ev.Object.(*coordinationv1.Lease)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
			return nil
		}
	}
	// step waits until Run sleeps on the fake clock, then advances it.
	step := func(d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !h.clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("Run never waited on the clock")
			}
			time.Sleep(time.Millisecond)
		}
		h.clk.Step(d)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ctrl.Run(ctx)
	}()
	step(200 * time.Millisecond) // first back-off
	step(400 * time.Millisecond) // doubled
	created := next(watch.Added)
	if len(created.OwnerReferences) != 1 {
		t.Errorf("created lease = %+v", created)
	}
	step(10 * time.Second) // renew interval
	renewed := next(watch.Modified)
	if !renewed.Spec.RenewTime.Time.After(created.Spec.RenewTime.Time) {
		t.Errorf("renew time %v not after %v", renewed.Spec.RenewTime.Time, created.Spec.RenewTime.Time)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
