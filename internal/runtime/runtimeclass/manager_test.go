package runtimeclass

import (
	"context"
	"errors"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

func class(name, handler string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
}

func newManager(cs *fake.Clientset) *Manager {
	rcs := cs.NodeV1().RuntimeClasses()
	return New(Config{
		Client: kubeclienttest.Wrap(cs).NodeV1(),
		// The fake clientset cannot stream a watch-list: say so, as
		// informers built on it do.
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return rcs.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return rcs.Watch(ctx, o)
			},
		}, cs),
	})
}

func ptr(s string) *string { return &s }

func lookupCases(t *testing.T, m *Manager) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		name    *string
		handler string
		missing bool
	}{
		{name: nil, handler: ""},
		{name: ptr(""), handler: ""},
		{name: ptr("gvisor"), handler: "runsc"},
		{name: ptr("test"), handler: "runc-test"},
		{name: ptr("gone"), missing: true},
	} {
		got, err := m.LookupRuntimeHandler(ctx, tc.name)
		switch {
		case tc.missing:
			// Upstream's lister's wording: the singular resource name.
			if !apierrors.IsNotFound(err) || err.Error() != `runtimeclass.node.k8s.io "gone" not found` {
				t.Errorf("lookup %q = %q, %v; want upstream's NotFound", *tc.name, got, err)
			}
		case err != nil || got != tc.handler:
			t.Errorf("lookup %v = %q, %v; want %q", tc.name, got, err, tc.handler)
		}
	}
}

// Once synced, lookups are answered from the cache: no request per pod.
func TestLookupFromCache(t *testing.T) {
	cs := fake.NewClientset(class("gvisor", "runsc"), class("test", "runc-test"))
	m := newManager(cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), m.HasSynced) {
		t.Fatal("cache did not sync")
	}
	cs.ClearActions()
	lookupCases(t, m)
	for _, a := range cs.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("synced lookup went to the API server: %v", a)
		}
	}
}

// Before the cache has synced the API server is asked: a class is never
// called unknown just because the list has not arrived.
func TestLookupBeforeSync(t *testing.T) {
	cs := fake.NewClientset(class("gvisor", "runsc"), class("test", "runc-test"))
	m := newManager(cs) // never Run: never synced
	lookupCases(t, m)
	cs.PrependReactor("get", "runtimeclasses", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	_, err := m.LookupRuntimeHandler(context.Background(), ptr("gvisor"))
	if err == nil || apierrors.IsNotFound(err) || err.Error() != "failed to lookup RuntimeClass gvisor: connection refused" {
		t.Errorf("API down: %v; want upstream's lookup failure, not NotFound", err)
	}
}
