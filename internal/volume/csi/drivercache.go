package csi

import (
	"context"
	"errors"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// ErrDriversNotSynced is returned while the CSIDriver cache has not listed
// the objects yet.
var ErrDriversNotSynced = errors.New("CSIDrivers has not been synced yet")

// DriverCache keeps the cluster's CSIDriver objects, listed and watched.
type DriverCache struct {
	store cache.Store
	r     *cache.Reflector
}

var _ DriverLister = (*DriverCache)(nil)

// NewDriverCache returns a cache fed by client; Run starts it.
func NewDriverCache(client kubeclient.Interface) *DriverCache {
	lw := cache.NewListWatchFromClient(client.StorageV1().RESTClient(), "csidrivers", "", fields.Everything())
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(lw, &storagev1.CSIDriver{}, store, cache.ReflectorOptions{Name: "kubelet-csidrivers"})
	return &DriverCache{store: store, r: r}
}

// Run lists and watches until ctx ends.
func (c *DriverCache) Run(ctx context.Context) { c.r.RunWithContext(ctx) }

// CSIDriver returns the named driver's object, nil when there is none.
func (c *DriverCache) CSIDriver(name string) (*storagev1.CSIDriver, error) {
	if c.r.LastSyncResourceVersion() == "" {
		return nil, ErrDriversNotSynced
	}
	obj, ok, err := c.store.GetByKey(name)
	if err != nil || !ok {
		return nil, err
	}
	return obj.(*storagev1.CSIDriver), nil
}
