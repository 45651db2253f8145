package runtimeclass

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// Config configures a Manager.
type Config struct {
	// Client reads RuntimeClasses (required).
	Client kubeclient.NodeV1Interface
	// ListerWatcher feeds the cache; nil lists and watches runtimeclasses
	// through Client's RESTClient.
	ListerWatcher cache.ListerWatcher
}

// Manager caches RuntimeClasses and answers LookupRuntimeHandler.
type Manager struct {
	client   kubeclient.RuntimeClassInterface
	store    cache.Store
	informer cache.Controller
}

// New returns a Manager; Run fills its cache. It panics without a Client.
func New(cfg Config) *Manager {
	if cfg.Client == nil {
		panic("runtimeclass.New: Client is required")
	}
	lw := cfg.ListerWatcher
	if lw == nil {
		lw = cache.NewListWatchFromClient(cfg.Client.RESTClient(), "runtimeclasses", metav1.NamespaceAll, fields.Everything())
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &nodev1.RuntimeClass{}, Handler: cache.ResourceEventHandlerFuncs{},
	})
	return &Manager{client: cfg.Client.RuntimeClasses(), store: store, informer: informer}
}

// Run lists and watches RuntimeClasses until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	klog.V(2).InfoS("Watching RuntimeClasses")
	m.informer.RunWithContext(ctx)
}

// HasSynced reports whether the cache holds the API server's list.
func (m *Manager) HasSynced() bool { return m.informer.HasSynced() }

// NotFound is the error for an unknown RuntimeClass, worded as upstream's
// lister words it (the event a pod gets reads "Failed to create pod
// sandbox: runtimeclass.node.k8s.io "x" not found").
func NotFound(name string) error {
	return apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
}

// LookupRuntimeHandler returns the CRI handler of the named RuntimeClass:
// "" for no class, a NotFound error (apierrors.IsNotFound) for an unknown
// one, as upstream's Manager.LookupRuntimeHandler.
func (m *Manager) LookupRuntimeHandler(ctx context.Context, runtimeClassName *string) (string, error) {
	if runtimeClassName == nil || *runtimeClassName == "" {
		return "", nil
	}
	name := *runtimeClassName
	if m.informer.HasSynced() {
		obj, ok, err := m.store.GetByKey(name)
		if err != nil {
			return "", fmt.Errorf("failed to lookup RuntimeClass %s: %v", name, err)
		}
		if !ok {
			return "", NotFound(name)
		}
		return obj.(*nodev1.RuntimeClass).Handler, nil
	}
	// Not synced yet (start-up, or the API server has been unreachable):
	// ask it rather than call a class unknown because the cache is empty.
	rc, err := m.client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", NotFound(name)
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %v", name, err)
	}
	return rc.Handler, nil
}
