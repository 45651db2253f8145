package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// maxBodyBytes is the API server's request size limit (3 MiB).
const maxBodyBytes = 3 << 20

// strictDecoder decodes core/v1 JSON reporting unknown and duplicate
// fields, as the API server's fieldValidation needs.
var strictDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme, serializerjson.SerializerOptions{Strict: true})
}()

// readBody reads a request's body within the size limit.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, errBadRequest("reading the request body: %v", err)
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// decodeObject decodes data into into (a *v1.Pod, ConfigMap or Secret) as
// the request's fieldValidation says: Strict refuses unknown or duplicate
// fields, Warn (the default) answers them with warnings, Ignore says
// nothing.
func decodeObject(w http.ResponseWriter, r *http.Request, data []byte, kind string, into runtime.Object) error {
	mode := r.URL.Query().Get("fieldValidation")
	switch mode {
	case "", "Warn", "Strict", "Ignore":
	default:
		return errBadRequest("fieldValidation: Unsupported value: %q: supported values: \"Ignore\", \"Warn\", \"Strict\"", mode)
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return errBadRequest("the request body is not a JSON object: %v", err)
	}
	if meta.Kind != "" && meta.Kind != kind || meta.APIVersion != "" && meta.APIVersion != "v1" {
		return errBadRequest("the API version in the data (%s) does not match the expected API version (v1)", meta.APIVersion)
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: kind}
	_, _, err := strictDecoder.Decode(data, &gvk, into)
	if sde, ok := runtime.AsStrictDecodingError(err); ok {
		switch mode {
		case "Strict":
			return errBadRequest("%s in version \"v1\" cannot be handled as a %s: %v", kind, kind, err)
		case "Ignore":
		default:
			for _, e := range sde.Errors() {
				warn(w, e.Error())
			}
		}
		err = nil
	}
	if err != nil {
		return errBadRequest("%s in version \"v1\" cannot be handled as a %s: %v", kind, kind, err)
	}
	into.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return nil
}

// isDryRun reports dryRun=All.
func isDryRun(r *http.Request) bool { return slices.Contains(r.URL.Query()["dryRun"], "All") }

// serveWrite answers create, update, patch and delete.
func (s *Server) serveWrite(w http.ResponseWriter, r *http.Request, rq request, verb string) {
	var err error
	if ct := r.Header.Get("Content-Type"); verb == verbPatch && ct != string(types.StrategicMergePatchType) && ct != string(types.MergePatchType) {
		writeError(w, errUnsupportedPatch(ct))
		return
	}
	switch rq.res.name {
	case "pods":
		err = s.writePod(w, r, rq, verb)
	case "configmaps", "secrets":
		err = s.writeObject(w, r, rq, verb)
	default:
		err = errMethodNotAllowed(verb, rq.res.name)
	}
	if err != nil {
		writeError(w, err)
	}
}

// checkNamespace sets an object's empty namespace to the request's and
// refuses another, as the API server does.
func checkNamespace(meta *metav1.ObjectMeta, namespace string) error {
	if meta.Namespace == "" {
		meta.Namespace = namespace
	}
	if meta.Namespace != namespace {
		return errBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// nameFor gives an object to create its name: as given, or generateName
// and five random characters.
func nameFor(meta *metav1.ObjectMeta) {
	if meta.Name == "" && meta.GenerateName != "" {
		meta.Name = meta.GenerateName + utilrand.String(5)
	}
}

// checkName refuses a body naming another object than the path.
func checkName(bodyName, pathName string, alsoOK ...string) error {
	if bodyName == pathName || slices.Contains(alsoOK, bodyName) {
		return nil
	}
	return errBadRequest("the name of the object (%s) does not match the name on the URL (%s)", bodyName, pathName)
}

// checkResourceVersion is the API server's optimistic concurrency check.
func checkResourceVersion(resource, name, given, current string) error {
	if given == "" || given == current {
		return nil
	}
	return apierrors.NewConflict(schema.GroupResource{Resource: resource}, name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// cleanMeta keeps what a manifest holds of metadata: the server's fields
// (uid, resourceVersion, timestamps, managed fields, ...) go.
func cleanMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences}
}

// manifestYAML renders obj as a manifest document of kind, without the
// empty status and creationTimestamp a typed object always carries.
func manifestYAML(obj runtime.Object, kind string) ([]byte, error) {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	if st, ok := doc["status"].(map[string]any); ok && len(st) == 0 {
		delete(doc, "status")
	}
	if m, ok := doc["metadata"].(map[string]any); ok && m["creationTimestamp"] == nil {
		delete(m, "creationTimestamp")
	}
	return yaml.Marshal(doc)
}

// writeContext bounds how long a write waits for the kubelet to see it.
func (s *Server) writeContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.WriteWait)
}

// deleteOptions reads a DELETE's options (body or query).
func deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		if err := json.Unmarshal(data, opts); err != nil {
			return nil, errBadRequest("DeleteOptions: %v", err)
		}
	}
	if v := r.URL.Query().Get("gracePeriodSeconds"); v != "" && opts.GracePeriodSeconds == nil {
		var g int64
		if _, err := fmt.Sscan(v, &g); err != nil {
			return nil, errBadRequest("gracePeriodSeconds: %v", err)
		}
		opts.GracePeriodSeconds = &g
	}
	if isDryRun(r) {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts, nil
}

// checkPreconditions applies DeleteOptions' uid and resourceVersion.
func checkPreconditions(resource, name string, opts *metav1.DeleteOptions, obj metav1.Object) error {
	p := opts.Preconditions
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != obj.GetUID() {
		return apierrors.NewConflict(schema.GroupResource{Resource: resource}, name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, obj.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(schema.GroupResource{Resource: resource}, name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, obj.GetResourceVersion()))
	}
	return nil
}

// invalid is the API server's 422 for an object that fails validation.
func invalid(kind, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, errs)
}
