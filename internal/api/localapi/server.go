package localapi

import (
	"context"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/localobjects"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
)

// PodSource lists the desired pods (the pod manager).
type PodSource interface {
	List() []*v1.Pod
}

// StatusSource returns a pod's status (the status manager).
type StatusSource interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

// WorkerStates lists the pod workers, which still hold pods that are being
// stopped after they left their source.
type WorkerStates interface {
	States() map[types.UID]podworkers.PodState
}

// ObjectStore holds the local ConfigMaps and Secrets.
type ObjectStore interface {
	Get(key localobjects.Key) (localobjects.Entry, bool)
	List(kind localobjects.Kind, namespace string) []localobjects.Entry
	Subscribe(fn func(changed []localobjects.Key))
}

// EventSource keeps the recent events (events.Ring).
type EventSource interface {
	List() []v1.Event
	Changed() <-chan struct{}
}

var _ ObjectStore = (*localobjects.Store)(nil)

// Config configures a Server. Every field is required but where noted.
type Config struct {
	NodeName string
	// StaticPodPath is the directory pods are written to; "" (or a path
	// that is not a directory) makes pods read-only.
	StaticPodPath string
	// ObjectsDir is where new ConfigMaps and Secrets are written
	// (--local-objects-dir, else StaticPodPath); "" makes them read-only.
	ObjectsDir string

	Pods     PodSource
	Statuses StatusSource
	Workers  WorkerStates
	// PodsChanged is poked when pods are added, removed or change status.
	PodsChanged <-chan struct{}
	Objects     ObjectStore
	Events      EventSource
	// Node returns the node as the kubelet computes it now.
	Node func(ctx context.Context) *v1.Node

	// ContainerLogs serves /containerLogs/... and Streaming serves
	// /exec/..., /attach/... and /portForward/... (the kubelet API's).
	ContainerLogs, Streaming http.Handler

	Version version.Info
	// Clock ages objects in tables; nil means the real clock.
	Clock clock.Clock
	// WriteWait bounds how long a write waits for the kubelet to take it
	// in before answering; 0 means 10 s.
	WriteWait time.Duration
}

// Server is the standalone node's kubectl-compatible API.
type Server struct {
	cfg     Config
	counter atomic.Uint64

	pods, configMaps, secrets, events *collection

	// deleting remembers when a pod that left its source was first seen
	// stopping (its deletionTimestamp); guarded by the pods collection.
	deleting map[types.UID]time.Time
	// writeMu serialises manifest edits.
	writeMu sync.Mutex
}

// New returns a Server; call Run to keep its watches fed.
func New(cfg Config) *Server {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.WriteWait <= 0 {
		cfg.WriteWait = 10 * time.Second
	}
	s := &Server{cfg: cfg, deleting: map[types.UID]time.Time{}}
	// Start past any resourceVersion an earlier kubelet handed out, so a
	// client resuming a watch across a restart is told to list again.
	s.counter.Store(uint64(cfg.Clock.Now().UnixMicro()))
	s.pods = newCollection(&s.counter, s.currentPods)
	s.configMaps = newCollection(&s.counter, s.objectsOf(localobjects.KindConfigMap))
	s.secrets = newCollection(&s.counter, s.objectsOf(localobjects.KindSecret))
	s.events = newCollection(&s.counter, s.currentEvents)
	return s
}

// Run refreshes the collections on every change until ctx ends.
func (s *Server) Run(ctx context.Context) {
	objects := make(chan struct{}, 1)
	s.cfg.Objects.Subscribe(func([]localobjects.Key) {
		select {
		case objects <- struct{}{}:
		default:
		}
	})
	go s.pods.run(ctx, s.cfg.PodsChanged)
	go s.events.run(ctx, s.cfg.Events.Changed())
	for {
		select {
		case <-ctx.Done():
			return
		case <-objects:
			s.configMaps.refresh()
			s.secrets.refresh()
		}
	}
}

func (s *Server) objectsOf(kind localobjects.Kind) func() []runtime.Object {
	return func() []runtime.Object {
		entries := s.cfg.Objects.List(kind, "")
		out := make([]runtime.Object, 0, len(entries))
		for _, e := range entries {
			out = append(out, e.Object.DeepCopyObject())
		}
		return out
	}
}

// currentEvents are the recent events; those about a pod name it as the
// pods resource does.
func (s *Server) currentEvents() []runtime.Object {
	evs := s.cfg.Events.List()
	out := make([]runtime.Object, 0, len(evs))
	for i := range evs {
		if ref := &evs[i].InvolvedObject; ref.Kind == "Pod" {
			ref.Name = s.manifestName(ref.Name)
		}
		out = append(out, &evs[i])
	}
	return out
}

// collectionOf is the collection of a resource; nil for nodes.
func (s *Server) collectionOf(res *resourceInfo) *collection {
	switch res.name {
	case "pods":
		return s.pods
	case "configmaps":
		return s.configMaps
	case "secrets":
		return s.secrets
	case "events":
		return s.events
	}
	return nil
}

// request is what a resource path names.
type request struct {
	res                  *resourceInfo
	namespace, name, sub string
}

// parsePath reads /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]].
func parsePath(p string) (request, error) {
	parts := strings.Split(strings.TrimPrefix(p, "/api/v1/"), "/")
	var rq request
	if len(parts) >= 3 && parts[0] == "namespaces" {
		rq.namespace = parts[1]
		parts = parts[2:]
	} else if len(parts) >= 1 && parts[0] == "namespaces" {
		return rq, resourceNotFound()
	}
	if len(parts) == 0 || len(parts) > 3 || parts[0] == "" {
		return rq, resourceNotFound()
	}
	name := parts[0]
	if len(parts) == 3 {
		name += "/" + parts[2]
		rq.sub = parts[2]
	}
	res, ok := resourceNamed(name)
	if !ok || (res.namespaced && rq.namespace == "" && len(parts) > 1) || (!res.namespaced && rq.namespace != "") {
		return rq, resourceNotFound()
	}
	rq.res = res
	if len(parts) >= 2 {
		rq.name = parts[1]
		if rq.name == "" {
			return rq, resourceNotFound()
		}
	}
	return rq, nil
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	if s.serveDiscovery(w, r, p) || serveOpenAPI(w, r, p) {
		return
	}
	switch {
	case p == "/healthz" || p == "/livez" || p == "/readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	case strings.HasPrefix(p, "/api/v1/"):
	default:
		writeError(w, resourceNotFound())
		return
	}
	rq, err := parsePath(p)
	if err != nil {
		writeError(w, err)
		return
	}
	if rq.sub != "" {
		s.serveSubresource(w, r, rq)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case rq.name != "":
			s.serveGet(w, r, rq)
		default:
			s.serveList(w, r, rq)
		}
	case http.MethodPost:
		if rq.name != "" || !rq.res.allows(verbCreate) || rq.namespace == "" {
			writeError(w, errMethodNotAllowed("create", rq.res.name))
			return
		}
		s.serveWrite(w, r, rq, verbCreate)
	case http.MethodPut, http.MethodPatch, http.MethodDelete:
		verb := map[string]string{http.MethodPut: verbUpdate, http.MethodPatch: verbPatch, http.MethodDelete: verbDelete}[r.Method]
		if rq.name == "" || !rq.res.allows(verb) {
			if rq.name == "" && verb == verbDelete {
				verb = "deletecollection"
			}
			writeError(w, errMethodNotAllowed(verb, rq.res.name))
			return
		}
		s.serveWrite(w, r, rq, verb)
	default:
		writeError(w, errMethodNotAllowed(r.Method, rq.res.name))
	}
}
