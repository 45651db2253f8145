package sources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/seed-kubelet/kubelet/internal/localobjects"
)

// maxManifestBytes bounds what a URL source reads, like upstream's 10MB.
const maxManifestBytes = 10 << 20

// errNoObjects is returned for input that holds no document at all.
var errNoObjects = errors.New("no pod or pod list found")

// podDecoder decodes JSON into core/v1 objects. It is not strict: unknown
// fields are dropped silently, as the upstream kubelet does for static pods.
// Field names are matched case-sensitively, as the API server does.
var podDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("registering core/v1 types: %v", err))
	}
	return serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme,
		serializerjson.SerializerOptions{})
}()

// decodePods turns manifest bytes into pods. The input may be JSON or YAML
// and may hold several YAML documents separated by "---"; each document must
// be a v1 Pod or a v1 PodList. Empty documents are ignored. It returns the
// pods in document order, or an error naming the failing document.
func decodePods(data []byte) ([]*v1.Pod, error) {
	m := decodeManifest(data, false)
	return m.pods, m.err
}

// decoded is what one manifest holds.
type decoded struct {
	// pods in document order; nil when err is set.
	pods []*v1.Pod
	// err is the first document that is neither a pod nor (when objects
	// are read) a ConfigMap or Secret, or that does not decode: it fails
	// the manifest's pods, and nothing else.
	err error
	// objects are the ConfigMap and Secret documents, when read.
	objects []objectDoc
}

// objectDoc is one ConfigMap or Secret document.
type objectDoc struct {
	index int
	// key names the object; Name is "" when the document does not say.
	key localobjects.Key
	// obj is the defaulted, valid object; nil when err is set.
	obj runtime.Object
	err error
}

// decodeManifest splits data into documents and decodes each. With objects,
// ConfigMap and Secret documents are decoded, defaulted and validated one
// by one (a bad one fails only itself); without, they are refused as any
// other kind, as upstream refuses them in staticPodPath.
func decodeManifest(data []byte, objects bool) decoded {
	var out decoded
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	docs := 0
	fail := func(index int, err error) {
		if out.err == nil {
			out.err = fmt.Errorf("document %d: %w", index, err)
		}
	}
	for index := 0; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(index, err)
			break
		}
		js, meta, empty, err := documentJSON(doc)
		if empty {
			continue
		}
		docs++
		if err != nil {
			fail(index, err)
			continue
		}
		if kind := localobjects.Kind(meta.Kind); objects && meta.APIVersion == "v1" && (kind == localobjects.KindConfigMap || kind == localobjects.KindSecret) {
			out.objects = append(out.objects, decodeObject(index, kind, js))
			continue
		}
		found, err := decodePodDocument(meta, js)
		if err != nil {
			fail(index, err)
			continue
		}
		out.pods = append(out.pods, found...)
	}
	if docs == 0 {
		out.err = errNoObjects
	}
	if out.err != nil {
		out.pods = nil
	}
	return out
}

// documentJSON converts one YAML or JSON document to JSON and reads its
// TypeMeta. empty reports a document holding only whitespace or comments.
func documentJSON(doc []byte) (js []byte, meta metav1.TypeMeta, empty bool, err error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, meta, true, nil
	}
	js, err = utilyaml.ToJSON(doc)
	if err != nil {
		return nil, meta, false, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, meta, true, nil
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, meta, false, fmt.Errorf("not a JSON object: %w", err)
	}
	return js, meta, false, nil
}

// decodePodDocument decodes a Pod or PodList document.
func decodePodDocument(meta metav1.TypeMeta, js []byte) ([]*v1.Pod, error) {
	if meta.APIVersion == "" || meta.Kind == "" {
		return nil, fmt.Errorf("apiVersion and kind are required (want apiVersion v1, kind Pod or PodList; got apiVersion %q, kind %q)", meta.APIVersion, meta.Kind)
	}
	if meta.APIVersion != "v1" || (meta.Kind != "Pod" && meta.Kind != "PodList") {
		return nil, fmt.Errorf("unsupported object %s %s: static pod manifests must be apiVersion v1, kind Pod or PodList", meta.APIVersion, meta.Kind)
	}
	if meta.Kind == "Pod" {
		pod := &v1.Pod{}
		if _, _, err := podDecoder.Decode(js, nil, pod); err != nil {
			return nil, fmt.Errorf("decoding Pod: %w", err)
		}
		// Objects from informers carry no TypeMeta; neither do ours, so a pod
		// looks the same whether it came alone or inside a list.
		pod.TypeMeta = metav1.TypeMeta{}
		return []*v1.Pod{pod}, nil
	}
	list := &v1.PodList{}
	if _, _, err := podDecoder.Decode(js, nil, list); err != nil {
		return nil, fmt.Errorf("decoding PodList: %w", err)
	}
	var pods []*v1.Pod
	for i := range list.Items {
		item := list.Items[i]
		item.TypeMeta = metav1.TypeMeta{}
		pods = append(pods, &item)
	}
	return pods, nil
}

// decodeObject decodes, defaults and validates a ConfigMap or Secret
// document, as the API server would on create.
func decodeObject(index int, kind localobjects.Kind, js []byte) objectDoc {
	d := objectDoc{index: index, key: localobjects.Key{Kind: kind}}
	var obj runtime.Object = &v1.ConfigMap{}
	if kind == localobjects.KindSecret {
		obj = &v1.Secret{}
	}
	if _, _, err := podDecoder.Decode(js, nil, obj); err != nil {
		d.err = fmt.Errorf("decoding %s: %w", kind, err)
		return d
	}
	localobjects.Default(obj)
	d.key, _ = localobjects.KeyOf(obj)
	if errs := localobjects.Validate(obj); len(errs) > 0 {
		d.err = fmt.Errorf("%s %q is invalid: %w", kind, d.key.Name, errs.ToAggregate())
		return d
	}
	// As for pods: readers get objects as informers hand them out.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	d.obj = obj
	return d
}
