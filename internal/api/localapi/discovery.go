package localapi

import (
	"net"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resourceInfo is one resource (or subresource) this API serves.
type resourceInfo struct {
	name       string // plural, "pods" or "pods/log"
	singular   string
	kind       string
	namespaced bool
	verbs      []string
	shortNames []string
	categories []string
}

// Verbs a resource may allow.
const (
	verbGet    = "get"
	verbList   = "list"
	verbWatch  = "watch"
	verbCreate = "create"
	verbUpdate = "update"
	verbPatch  = "patch"
	verbDelete = "delete"
)

var (
	readWrite = []string{verbCreate, verbDelete, verbGet, verbList, verbPatch, verbUpdate, verbWatch}
	connect   = []string{verbCreate, verbGet}
)

// resources are what /api/v1 serves, in its order (by name), with
// upstream's kinds, short names and categories. Only what a standalone
// kubelet can honour is listed.
var resources = []resourceInfo{
	{name: "configmaps", singular: "configmap", kind: "ConfigMap", namespaced: true, verbs: readWrite, shortNames: []string{"cm"}},
	{name: "events", singular: "event", kind: "Event", namespaced: true, verbs: []string{verbGet, verbList, verbWatch}, shortNames: []string{"ev"}},
	{name: "nodes", singular: "node", kind: "Node", verbs: []string{verbGet, verbList}, shortNames: []string{"no"}},
	{name: "pods", singular: "pod", kind: "Pod", namespaced: true, verbs: readWrite, shortNames: []string{"po"}, categories: []string{"all"}},
	{name: "pods/attach", kind: "PodAttachOptions", namespaced: true, verbs: connect},
	{name: "pods/exec", kind: "PodExecOptions", namespaced: true, verbs: connect},
	{name: "pods/log", kind: "Pod", namespaced: true, verbs: []string{verbGet}},
	{name: "pods/portforward", kind: "PodPortForwardOptions", namespaced: true, verbs: connect},
	{name: "secrets", singular: "secret", kind: "Secret", namespaced: true, verbs: readWrite},
}

// resourceNamed returns the resource called name ("pods", "pods/log").
func resourceNamed(name string) (*resourceInfo, bool) {
	i := slices.IndexFunc(resources, func(r resourceInfo) bool { return r.name == name })
	if i < 0 {
		return nil, false
	}
	return &resources[i], true
}

func (r *resourceInfo) allows(verb string) bool { return slices.Contains(r.verbs, verb) }

// apiResourceList is GET /api/v1.
func apiResourceList() *metav1.APIResourceList {
	out := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1"}
	for _, r := range resources {
		out.APIResources = append(out.APIResources, metav1.APIResource{
			Name: r.name, SingularName: r.singular, Namespaced: r.namespaced, Kind: r.kind,
			Verbs: r.verbs, ShortNames: r.shortNames, Categories: r.categories,
		})
	}
	return out
}

// serveDiscovery answers /api, /api/v1, /apis and /version; ok is false
// for any other path. Aggregated discovery (apidiscovery.k8s.io/v2) is not
// produced: a plain application/json answer makes client-go fall back to
// these legacy documents, as with an older API server.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, path string) bool {
	if path != "/api" && path != "/api/v1" && path != "/apis" && path != "/version" {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, errMethodNotAllowed(r.Method, path))
		return true
	}
	switch path {
	case "/version":
		writeJSON(w, http.StatusOK, s.cfg.Version)
	case "/api":
		addr := r.Host
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			addr = local.String()
		}
		writeJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: addr}},
		})
	case "/api/v1":
		writeJSON(w, http.StatusOK, apiResourceList())
	case "/apis":
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}})
	}
	return true
}
