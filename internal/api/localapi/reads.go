package localapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// withKind copies obj with its apiVersion and kind set, as a single object
// (or a watch event's) is served.
func withKind(obj runtime.Object, kind string) runtime.Object {
	out := obj.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	return out
}

// sampleOf is an empty object of a resource, for field selector checks.
func sampleOf(res *resourceInfo) runtime.Object {
	switch res.kind {
	case "Pod":
		return &v1.Pod{}
	case "ConfigMap":
		return &v1.ConfigMap{}
	case "Secret":
		return &v1.Secret{}
	case "Event":
		return &v1.Event{}
	}
	return &v1.Node{}
}

// tableOptionsOf reads includeObject from the query.
func tableOptionsOf(r *http.Request, neg negotiated) (tableOptions, error) {
	o := tableOptions{includeObject: metav1.IncludeMetadata, groupVersion: neg.groupVersion}
	switch v := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")); v {
	case "":
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
		o.includeObject = v
	default:
		return o, errBadRequest("includeObject: Unsupported value: %q: supported values: \"None\", \"Metadata\", \"Object\"", v)
	}
	o.noHeaders = r.URL.Query().Get("noHeaders") == "true"
	return o, nil
}

// read is what a list, get or watch request asked for.
type read struct {
	neg   negotiated
	table tableOptions
	sel   selector
}

func (s *Server) parseRead(r *http.Request, rq request) (read, error) {
	var rd read
	var err error
	if rd.neg, err = negotiate(r); err != nil {
		return rd, err
	}
	if rd.table, err = tableOptionsOf(r, rd.neg); err != nil {
		return rd, err
	}
	q := r.URL.Query()
	rd.sel, err = parseSelector(q.Get("labelSelector"), q.Get("fieldSelector"), sampleOf(rq.res))
	return rd, err
}

// itemsOf returns what a request sees of a resource: its objects in the
// request's namespace (every namespace for a cluster-wide request) that
// the selector picks, and the list's resourceVersion.
func (s *Server) itemsOf(r *http.Request, rq request, sel selector) ([]runtime.Object, uint64) {
	if rq.res.name == "nodes" {
		return []runtime.Object{s.node(r)}, s.counter.Load()
	}
	all, rv := s.collectionOf(rq.res).list()
	var out []runtime.Object
	for _, obj := range all {
		if (rq.namespace == "" || objectNamespace(obj) == rq.namespace) && sel.matches(obj) {
			out = append(out, obj)
		}
	}
	return out, rv
}

func objectNamespace(obj runtime.Object) string {
	ns, _ := splitKey(objectKey(obj))
	return ns
}

// node is the local Node, with this API's resourceVersion: the node's
// status is computed afresh on each read.
func (s *Server) node(r *http.Request) *v1.Node {
	n := s.cfg.Node(r.Context()).DeepCopy()
	setRV(n, s.counter.Load())
	return n
}

// serveGet answers GET of one object.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, rq request) {
	if !rq.res.allows(verbGet) {
		writeError(w, errMethodNotAllowed(verbGet, rq.res.name))
		return
	}
	rd, err := s.parseRead(r, rq)
	if err != nil {
		writeError(w, err)
		return
	}
	obj, err := s.lookup(r, rq)
	if err != nil {
		writeError(w, err)
		return
	}
	switch rd.neg.format {
	case formatTable:
		t, err := toTable(rq.res.kind, []runtime.Object{obj}, objectRV(obj), rd.table, s.cfg.Clock.Now())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, t)
	case formatMetadata:
		writeJSON(w, http.StatusOK, partialMetadata(obj, rd.neg.groupVersion))
	default:
		writeJSON(w, http.StatusOK, withKind(obj, rq.res.kind))
	}
}

// lookup finds the object a request names; a pod may be named as the
// kubelet runs it (web-node1) or as its manifest names it (web).
func (s *Server) lookup(r *http.Request, rq request) (runtime.Object, error) {
	if rq.res.name == "nodes" {
		if rq.name != s.cfg.NodeName {
			return nil, errNotFound("nodes", rq.name)
		}
		return s.node(r), nil
	}
	if rq.res.name == "pods" {
		if pod, ok := s.findPod(rq.namespace, rq.name); ok {
			return pod, nil
		}
		return nil, errNotFound("pods", rq.name)
	}
	obj, ok := s.collectionOf(rq.res).get(rq.namespace, rq.name)
	if !ok {
		return nil, errNotFound(rq.res.name, rq.name)
	}
	return obj, nil
}

// serveList answers a list, or a watch with watch=true.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, rq request) {
	rd, err := s.parseRead(r, rq)
	if err != nil {
		writeError(w, err)
		return
	}
	if isWatch(r) {
		if !rq.res.allows(verbWatch) {
			writeError(w, errMethodNotAllowed(verbWatch, rq.res.name))
			return
		}
		s.serveWatch(w, r, rq, rd)
		return
	}
	if !rq.res.allows(verbList) {
		writeError(w, errMethodNotAllowed(verbList, rq.res.name))
		return
	}
	items, rv := s.itemsOf(r, rq, rd.sel)
	rvText := strconv.FormatUint(rv, 10)
	switch rd.neg.format {
	case formatTable:
		t, err := toTable(rq.res.kind, items, rvText, rd.table, s.cfg.Clock.Now())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, t)
	case formatMetadata:
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: rd.neg.groupVersion}}
		list.ResourceVersion = rvText
		list.Items = []metav1.PartialObjectMetadata{}
		for _, obj := range items {
			list.Items = append(list.Items, *partialMetadata(obj, rd.neg.groupVersion))
		}
		writeJSON(w, http.StatusOK, list)
	default:
		raw := make([]json.RawMessage, 0, len(items))
		for _, obj := range items {
			data, err := json.Marshal(obj)
			if err != nil {
				writeError(w, err)
				return
			}
			raw = append(raw, data)
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"kind": rq.res.kind + "List", "apiVersion": "v1",
			"metadata": metav1.ListMeta{ResourceVersion: rvText}, "items": raw,
		})
	}
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

// serveWatch streams a collection's changes as the API server does:
// newline-separated watch events, Tables when asked for (columns in the
// first only), ADDED for the current objects when no resourceVersion is
// given, and a 410 Expired ERROR event for one too old to resume from.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, rq request, rd read) {
	coll := s.collectionOf(rq.res)
	q := r.URL.Query()
	rvText := q.Get("resourceVersion")
	sendInitial := q.Get("sendInitialEvents") == "true"
	initial := rvText == "" || rvText == "0" || sendInitial
	rv, err := strconv.ParseUint(rvText, 10, 64)
	if err != nil && !initial {
		writeError(w, errBadRequest("resourceVersion: Invalid value: %q: must be a number", rvText))
		return
	}
	var timeout <-chan time.Time
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.Atoi(ts)
		if err != nil || n < 0 {
			writeError(w, errBadRequest("timeoutSeconds: Invalid value: %q", ts))
			return
		}
		if n > 0 {
			t := time.NewTimer(time.Duration(n) * time.Second)
			defer t.Stop()
			timeout = t.C
		}
	}
	wch, current, err := coll.watch(rv, initial)
	var gone errGone
	if errors.As(err, &gone) {
		err = nil
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := &watchEncoder{s: s, w: w, rc: rc, kind: rq.res.kind, rd: rd}
	if wch == nil {
		st := apierrors.NewResourceExpired(gone.Error()).Status()
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		enc.raw(watch.Error, &st)
		return
	}
	defer coll.stop(wch)
	inScope := func(obj runtime.Object) bool {
		return obj != nil && (rq.namespace == "" || objectNamespace(obj) == rq.namespace) && rd.sel.matches(obj)
	}
	for _, obj := range current {
		if inScope(obj) && !enc.send(watch.Added, obj) {
			return
		}
	}
	if sendInitial {
		bm := withKind(sampleOf(rq.res), rq.res.kind)
		setRV(bm, s.counter.Load())
		if acc, ok := bm.(interface{ SetAnnotations(map[string]string) }); ok {
			acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		if !enc.raw(watch.Bookmark, bm) {
			return
		}
	}
	_ = rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-timeout:
			return
		case ch, ok := <-wch.ch:
			if !ok {
				return
			}
			now, before := inScope(ch.obj), inScope(ch.prev)
			typ := ch.typ
			switch {
			case typ == watch.Modified && now && !before:
				typ = watch.Added
			case typ == watch.Modified && !now && before:
				typ = watch.Deleted
			case !now:
				continue
			}
			if !enc.send(typ, ch.obj) {
				return
			}
		}
	}
}

// watchEncoder writes watch events.
type watchEncoder struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	kind    string
	rd      read
	started bool
}

// send writes one object's event in the requested format.
func (e *watchEncoder) send(typ watch.EventType, obj runtime.Object) bool {
	var out any
	switch e.rd.neg.format {
	case formatTable:
		opts := e.rd.table
		opts.noHeaders = opts.noHeaders || e.started
		t, err := toTable(e.kind, []runtime.Object{obj}, objectRV(obj), opts, e.s.cfg.Clock.Now())
		if err != nil {
			return false
		}
		out = t
	case formatMetadata:
		out = partialMetadata(obj, e.rd.neg.groupVersion)
	default:
		out = withKind(obj, e.kind)
	}
	e.started = true
	return e.raw(typ, out)
}

func (e *watchEncoder) raw(typ watch.EventType, obj any) bool {
	data, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	ev, err := json.Marshal(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}})
	if err != nil {
		return false
	}
	if _, err := e.w.Write(append(ev, '\n')); err != nil {
		return false
	}
	return e.rc.Flush() == nil
}
