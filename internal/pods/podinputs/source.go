package podinputs

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// DefaultTTL is how long a config map or secret is served from cache: the
// default TTL of upstream's cache-based managers.
const DefaultTTL = time.Minute

// DefaultServiceTTL is how long a namespace's service list is reused. It is
// short on purpose: upstream watches services, so a service created just
// before a pod shows up in that pod's variables, and a long TTL would break
// that (the "pods should contain environment variables for services"
// conformance test creates exactly that sequence).
const DefaultServiceTTL = time.Second

// Config configures a Source.
type Config struct {
	// Client reaches the API server. Required.
	Client kubeclient.Interface
	// Clock times the cache; nil means the real clock.
	Clock clock.Clock
	// TTL is how long a config map or secret read is served from cache
	// without asking again; 0 means DefaultTTL.
	TTL time.Duration
	// ServiceTTL is the same for a namespace's service list and the master
	// service; 0 means DefaultServiceTTL.
	ServiceTTL time.Duration
	// Recorder receives the FailedToRetrieveImagePullSecret warning on the
	// pod; nil means the warning is only logged.
	Recorder events.Recorder
}

// Source reads pod inputs from the API server. Instead of upstream's default
// Watch change detection strategy it uses the simpler TTL-based one (the
// "Cache" strategy): an object is read with a GET and served from memory
// until its TTL runs out. Objects it returns are shared: callers must not
// modify them.
type Source struct {
	client     kubeclient.Interface
	recorder   events.Recorder
	ttl        time.Duration
	serviceTTL time.Duration
	cache      *ttlCache
}

var _ criconfig.EnvSource = (*Source)(nil)

// New returns a Source; it panics without a Client.
func New(cfg Config) *Source {
	if cfg.Client == nil {
		panic("podinputs.New: Config.Client is required")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	s := &Source{client: cfg.Client, recorder: cfg.Recorder, ttl: cfg.TTL, serviceTTL: cfg.ServiceTTL, cache: newTTLCache(clk)}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.serviceTTL <= 0 {
		s.serviceTTL = DefaultServiceTTL
	}
	return s
}

// getOptions reads from the apiserver's cache when refreshing a copy we
// already hold, as upstream does, and from etcd otherwise.
func getOptions(refresh bool) metav1.GetOptions {
	if refresh {
		return metav1.GetOptions{ResourceVersion: "0"}
	}
	return metav1.GetOptions{}
}

// ConfigMap returns the named config map. A missing one is reported with the
// API server's NotFound error unchanged (its text is what upstream shows as
// the container's waiting message); other failures are wrapped.
func (s *Source) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := s.cache.get(ctx, cacheKey{"configmap", namespace, name}, s.ttl, func(ctx context.Context, refresh bool) (runtime.Object, error) {
		return s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, getOptions(refresh))
	})
	if err != nil {
		return nil, apiError("configmap", namespace, name, err)
	}
	return obj.(*v1.ConfigMap), nil
}

// Secret returns the named secret, with errors as for ConfigMap.
func (s *Source) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := s.cache.get(ctx, cacheKey{"secret", namespace, name}, s.ttl, func(ctx context.Context, refresh bool) (runtime.Object, error) {
		return s.client.CoreV1().Secrets(namespace).Get(ctx, name, getOptions(refresh))
	})
	if err != nil {
		return nil, apiError("secret", namespace, name, err)
	}
	return obj.(*v1.Secret), nil
}

func apiError(kind, namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return err
	}
	return fmt.Errorf("get %s %s/%s: %w", kind, namespace, name, err)
}
