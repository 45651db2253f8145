package localobjects

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

var (
	_ volume.Sources      = (*Store)(nil)
	_ criconfig.EnvSource = (*Store)(nil)
)

// Entry is one local object and where it was read.
type Entry struct {
	Key Key
	// Object is a *v1.ConfigMap or *v1.Secret, defaulted and valid. Objects
	// a Store returns are shared: callers must not modify them.
	Object runtime.Object
	// Path is the file that defines it.
	Path string
}

// StoreConfig configures a Store.
type StoreConfig struct {
	// Sources names the sources that call Set, highest precedence first:
	// an object two sources define is taken from the earlier one.
	Sources []string
	// Clock stamps creationTimestamp; nil means the real clock.
	Clock clock.Clock
}

// Store holds the local objects of every source. Safe for concurrent use.
type Store struct {
	cfg StoreConfig

	mu        sync.RWMutex
	bySource  map[string]map[Key]Entry
	merged    map[Key]Entry
	conflicts map[Key]string // duplicates already logged
	subs      []func(changed []Key)
}

// NewStore returns an empty Store.
func NewStore(cfg StoreConfig) *Store {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Store{cfg: cfg, bySource: map[string]map[Key]Entry{}, merged: map[Key]Entry{}, conflicts: map[Key]string{}}
}

// Subscribe calls fn, from the goroutine of the Set that caused it and
// outside the Store's lock, with the keys of the objects that were added,
// changed or removed. fn must not block.
func (s *Store) Subscribe(fn func(changed []Key)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

// Set replaces everything source defines by entries (each valid, no key
// twice) and tells subscribers what changed.
func (s *Store) Set(source string, entries []Entry) {
	next := make(map[Key]Entry, len(entries))
	for _, e := range entries {
		next[e.Key] = e
	}
	s.mu.Lock()
	s.bySource[source] = next
	merged := s.merge()
	var changed []Key
	now := metav1.NewTime(s.cfg.Clock.Now())
	for key, e := range merged {
		old, had := s.merged[key]
		if had && sameContent(old.Object, e.Object) {
			// Same object, maybe read from another file now: keep the
			// served copy (identity and all), note where it lives.
			old.Path = e.Path
			merged[key] = old
			continue
		}
		obj := e.Object.DeepCopyObject()
		meta := objectMeta(obj)
		if had {
			prev := objectMeta(old.Object)
			meta.UID, meta.CreationTimestamp = prev.UID, prev.CreationTimestamp
		} else {
			meta.UID, meta.CreationTimestamp = uuid.NewUUID(), now
		}
		e.Object = obj
		merged[key] = e
		changed = append(changed, key)
	}
	for key := range s.merged {
		if _, ok := merged[key]; !ok {
			changed = append(changed, key)
		}
	}
	s.merged = merged
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	slices.SortFunc(changed, compareKeys)
	klog.V(2).InfoS("Local objects changed", "source", source, "objects", changed)
	for _, fn := range subs {
		fn(changed)
	}
}

// merge takes each key from the first source (in precedence order, then
// any other) that defines it, logging a duplicate once. Called with mu held.
func (s *Store) merge() map[Key]Entry {
	order := slices.Clone(s.cfg.Sources)
	for name := range s.bySource {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	out := map[Key]Entry{}
	seen := map[Key]bool{}
	for _, name := range order {
		for key, e := range s.bySource[name] {
			seen[key] = true
			first, taken := out[key]
			if !taken {
				out[key] = e
				continue
			}
			if s.conflicts[key] != e.Path {
				s.conflicts[key] = e.Path
				klog.InfoS("Ignoring a local object defined twice; the first definition is used", "object", key.String(), "path", e.Path, "definedBy", first.Path)
			}
		}
	}
	for key := range s.conflicts {
		if !seen[key] {
			delete(s.conflicts, key)
		}
	}
	return out
}

// sameContent compares two objects as a reader of them would: everything
// but the identity the Store gives them.
func sameContent(a, b runtime.Object) bool {
	strip := func(o runtime.Object) runtime.Object {
		o = o.DeepCopyObject()
		m := objectMeta(o)
		m.UID, m.CreationTimestamp, m.ResourceVersion = "", metav1.Time{}, ""
		return o
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return &o.ObjectMeta
	case *v1.Secret:
		return &o.ObjectMeta
	}
	panic("localobjects: not a ConfigMap or a Secret")
}

func compareKeys(a, b Key) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Get returns the object key names.
func (s *Store) Get(key Key) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.merged[key]
	return e, ok
}

// List returns the objects of kind in namespace ("" for every namespace),
// ordered by namespace and name.
func (s *Store) List(kind Kind, namespace string) []Entry {
	s.mu.RLock()
	out := make([]Entry, 0, len(s.merged))
	for key, e := range s.merged {
		if key.Kind == kind && (namespace == "" || key.Namespace == namespace) {
			out = append(out, e)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Entry) int { return compareKeys(a.Key, b.Key) })
	return out
}

// ConfigMap returns the named config map, or a NotFound error worded as
// upstream's object cache words it (`configmap "x" not found`, the text a
// container's CreateContainerConfigError shows).
func (s *Store) ConfigMap(_ context.Context, namespace, name string) (*v1.ConfigMap, error) {
	e, ok := s.Get(Key{KindConfigMap, namespace, name})
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("configmap"), name)
	}
	return e.Object.(*v1.ConfigMap), nil
}

// Secret returns the named secret, with errors as for ConfigMap.
func (s *Store) Secret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	e, ok := s.Get(Key{KindSecret, namespace, name})
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("secret"), name)
	}
	return e.Object.(*v1.Secret), nil
}

// ServiceEnv returns no variables: a standalone node has no services.
func (s *Store) ServiceEnv(context.Context, string, bool) (map[string]string, error) {
	return nil, nil
}

// References reports whether pod reads one of the objects keys name (a
// config map or secret in its namespace).
func References(pod *v1.Pod, keys []Key) bool {
	var cms, secrets []string
	for _, k := range keys {
		if k.Namespace != pod.Namespace {
			continue
		}
		switch k.Kind {
		case KindConfigMap:
			cms = append(cms, k.Name)
		case KindSecret:
			secrets = append(secrets, k.Name)
		}
	}
	return anyIn(cms, podutil.ConfigMapNames(pod)) || anyIn(secrets, podutil.SecretNames(pod))
}

func anyIn(names, of []string) bool {
	for _, n := range names {
		if slices.Contains(of, n) {
			return true
		}
	}
	return false
}
