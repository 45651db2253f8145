package localapi

import (
	"fmt"
	"net/http"
	"reflect"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
	"github.com/seed-kubelet/kubelet/internal/localobjects"
)

// manifestObject is the manifest a ConfigMap or Secret is written as: the
// object without what the server gives it (identity, timestamps).
func manifestObject(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return &v1.ConfigMap{ObjectMeta: cleanMeta(o.ObjectMeta), Data: o.Data, BinaryData: o.BinaryData, Immutable: o.Immutable}
	case *v1.Secret:
		return &v1.Secret{ObjectMeta: cleanMeta(o.ObjectMeta), Data: o.Data, Type: o.Type, Immutable: o.Immutable}
	}
	return obj
}

func newObject(kind localobjects.Kind) runtime.Object {
	if kind == localobjects.KindSecret {
		return &v1.Secret{}
	}
	return &v1.ConfigMap{}
}

func objectMetaOf(obj runtime.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return &o.ObjectMeta
	case *v1.Secret:
		return &o.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}

// writeObject creates, replaces, patches or deletes a local ConfigMap or
// Secret: new ones go to <ObjectsDir>/<kind>_<ns>_<name>.yaml, others are
// edited in the file that defines them.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, rq request, verb string) error {
	kind := localobjects.Kind(rq.res.kind)
	gr := schema.GroupResource{Resource: rq.res.name}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	key := localobjects.Key{Kind: kind, Namespace: rq.namespace, Name: rq.name}
	if verb == verbCreate {
		if s.cfg.ObjectsDir == "" {
			return errMethodNotAllowed(verb, rq.res.name)
		}
		data, err := readBody(r)
		if err != nil {
			return err
		}
		obj := newObject(kind)
		if err := decodeObject(w, r, data, string(kind), obj); err != nil {
			return err
		}
		meta := objectMetaOf(obj)
		if err := checkNamespace(meta, rq.namespace); err != nil {
			return err
		}
		nameFor(meta)
		localobjects.Default(obj)
		if errs := localobjects.Validate(obj); len(errs) > 0 {
			return invalid(string(kind), meta.Name, errs)
		}
		key.Name = meta.Name
		if _, exists := s.cfg.Objects.Get(key); exists {
			return apierrors.NewAlreadyExists(gr, meta.Name)
		}
		if doc, err := findDocument(s.cfg.ObjectsDir, string(kind), key.Namespace, key.Name); err != nil {
			return err
		} else if doc != nil {
			return apierrors.NewAlreadyExists(gr, meta.Name)
		}
		path, err := newManifestPath(s.cfg.ObjectsDir, string(kind), key.Namespace, key.Name)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		return s.putObject(w, r, rq, key, obj, func(data []byte) error { return atomicfile.Write(path, data, manifestMode) }, http.StatusCreated)
	}

	entry, ok := s.cfg.Objects.Get(key)
	if !ok {
		return errNotFound(rq.res.name, rq.name)
	}
	current, _ := s.collectionOf(rq.res).get(rq.namespace, rq.name)
	if current == nil {
		current = entry.Object
	}
	doc, err := findDocument(entry.Path, string(kind), key.Namespace, key.Name)
	if err != nil {
		return err
	}
	if doc == nil {
		return apierrors.NewConflict(gr, rq.name, fmt.Errorf("%s no longer defines it", entry.Path))
	}
	var obj runtime.Object
	switch verb {
	case verbDelete:
		return s.deleteObject(w, r, rq, key, current, doc)
	case verbUpdate:
		data, err := readBody(r)
		if err != nil {
			return err
		}
		obj = newObject(kind)
		if err := decodeObject(w, r, data, string(kind), obj); err != nil {
			return err
		}
	case verbPatch:
		patch, err := readBody(r)
		if err != nil {
			return err
		}
		base, err := doc.json()
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(r.Header.Get("Content-Type"), base, patch, newObject(kind))
		if err != nil {
			return err
		}
		obj = newObject(kind)
		if err := decodeObject(w, r, patched, string(kind), obj); err != nil {
			return err
		}
	default:
		return errMethodNotAllowed(verb, rq.res.name)
	}
	meta := objectMetaOf(obj)
	if err := checkNamespace(meta, rq.namespace); err != nil {
		return err
	}
	if err := checkName(meta.Name, rq.name); err != nil {
		return err
	}
	if err := checkResourceVersion(rq.res.name, rq.name, meta.ResourceVersion, objectRV(current)); err != nil {
		return err
	}
	localobjects.Default(obj)
	if errs := localobjects.ValidateUpdate(obj, entry.Object); len(errs) > 0 {
		return invalid(string(kind), rq.name, errs)
	}
	return s.putObject(w, r, rq, key, obj, doc.replace, http.StatusOK)
}

// putObject writes obj's manifest and answers with the object as served
// once the kubelet has read it (or as written, after WriteWait).
func (s *Server) putObject(w http.ResponseWriter, r *http.Request, rq request, key localobjects.Key, obj runtime.Object, write func([]byte) error, code int) error {
	manifest := manifestObject(obj)
	if isDryRun(r) {
		writeJSON(w, code, withKind(manifest, rq.res.kind))
		return nil
	}
	data, err := manifestYAML(manifest, rq.res.kind)
	if err != nil {
		return err
	}
	if err := write(data); err != nil {
		return apierrors.NewInternalError(err)
	}
	// Other writes need not wait while this one waits to be seen.
	s.writeMu.Unlock()
	defer s.writeMu.Lock()
	ctx, cancel := s.writeContext(r)
	defer cancel()
	var served runtime.Object
	s.collectionOf(rq.res).waitFor(ctx, func(items map[string]runtime.Object) bool {
		if cur, ok := items[key.Namespace+"/"+key.Name]; ok && sameManifest(manifestObject(cur), manifest) {
			served = cur
		}
		return served != nil
	})
	if served == nil {
		served = manifest
		warn(w, fmt.Sprintf("the kubelet has not read %s %s/%s back yet; see its log", key.Kind, key.Namespace, key.Name))
	}
	writeJSON(w, code, withKind(served, rq.res.kind))
	return nil
}

// sameManifest compares two manifests as JSON would render them.
func sameManifest(a, b runtime.Object) bool {
	ma, mb := objectMetaOf(a), objectMetaOf(b)
	ca, cb := a.DeepCopyObject(), b.DeepCopyObject()
	*objectMetaOf(ca), *objectMetaOf(cb) = cleanMeta(*ma), cleanMeta(*mb)
	normalizeEmpty(ca)
	normalizeEmpty(cb)
	return reflect.DeepEqual(ca, cb)
}

// normalizeEmpty makes empty maps nil, as a JSON round trip does.
func normalizeEmpty(obj runtime.Object) {
	m := objectMetaOf(obj)
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	switch o := obj.(type) {
	case *v1.ConfigMap:
		if len(o.Data) == 0 {
			o.Data = nil
		}
		if len(o.BinaryData) == 0 {
			o.BinaryData = nil
		}
	case *v1.Secret:
		if len(o.Data) == 0 {
			o.Data = nil
		}
	}
}

// deleteObject removes an object's document from its manifest.
func (s *Server) deleteObject(w http.ResponseWriter, r *http.Request, rq request, key localobjects.Key, current runtime.Object, doc *document) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	if err := checkPreconditions(rq.res.name, rq.name, opts, objectMetaOf(current)); err != nil {
		return err
	}
	if len(opts.DryRun) == 0 {
		if err := doc.replace(nil); err != nil {
			return apierrors.NewInternalError(err)
		}
		// Other writes need not wait while this one waits to be seen.
		s.writeMu.Unlock()
		defer s.writeMu.Lock()
		ctx, cancel := s.writeContext(r)
		defer cancel()
		s.collectionOf(rq.res).waitFor(ctx, func(items map[string]runtime.Object) bool {
			_, ok := items[key.Namespace+"/"+key.Name]
			return !ok
		})
	}
	writeJSON(w, http.StatusOK, withKind(current, rq.res.kind))
	return nil
}
