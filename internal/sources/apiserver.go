package sources

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// APISourceConfig configures the API server pod source.
type APISourceConfig struct {
	// Client lists and watches pods. Required.
	Client kubeclient.Interface
	// NodeName selects the pods bound to this node. Required.
	NodeName string
	// Out receives a full snapshot of the node's pods after every change.
	Out chan<- []*v1.Pod
	// Watch records whether the pod watch is open. May be nil.
	Watch *WatchState
}

// RunAPISource watches the pods bound to the node (spec.nodeName) and
// pushes the whole set to Out on every change, until ctx ends. The
// reflector relists and rewatches with back-off when the API server is
// unreachable; the last snapshot stays in force meanwhile.
func RunAPISource(ctx context.Context, cfg APISourceConfig) {
	selector := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	lw := cache.NewFilteredListWatchFromClient(cfg.Client.CoreV1().RESTClient(), "pods", v1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	push := func(objs []interface{}) {
		pods := make([]*v1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*v1.Pod); ok {
				pods = append(pods, p)
			}
		}
		select {
		case cfg.Out <- pods:
		case <-ctx.Done():
		}
	}
	store := cache.NewUndeltaStore(push, cache.MetaNamespaceKeyFunc)
	var lister cache.ListerWatcher = lw
	if cfg.Watch != nil {
		lister = trackedListWatch{ListerWatcherWithContext: cache.ToListerWatcherWithContext(lw), state: cfg.Watch}
	}
	r := cache.NewReflectorWithOptions(lister, &v1.Pod{}, store, cache.ReflectorOptions{Name: "kubelet-api-pods", ResyncPeriod: 0})
	klog.InfoS("Watching pods bound to this node from the API server", "node", cfg.NodeName)
	r.RunWithContext(ctx)
}
