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
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var pods []*v1.Pod
	docs := 0
	for index := 0; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		found, empty, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		if !empty {
			docs++
		}
		pods = append(pods, found...)
	}
	if docs == 0 {
		return nil, errNoObjects
	}
	return pods, nil
}

// decodeDocument decodes one YAML or JSON document. empty reports a document
// holding only whitespace or comments.
func decodeDocument(doc []byte) (pods []*v1.Pod, empty bool, err error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, true, nil
	}
	js, err := utilyaml.ToJSON(doc)
	if err != nil {
		return nil, false, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, true, nil
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, false, fmt.Errorf("not a JSON object: %w", err)
	}
	if meta.APIVersion == "" || meta.Kind == "" {
		return nil, false, fmt.Errorf("apiVersion and kind are required (want apiVersion v1, kind Pod or PodList; got apiVersion %q, kind %q)", meta.APIVersion, meta.Kind)
	}
	if meta.APIVersion != "v1" || (meta.Kind != "Pod" && meta.Kind != "PodList") {
		return nil, false, fmt.Errorf("unsupported object %s %s: static pod manifests must be apiVersion v1, kind Pod or PodList", meta.APIVersion, meta.Kind)
	}
	if meta.Kind == "Pod" {
		pod := &v1.Pod{}
		if _, _, err := podDecoder.Decode(js, nil, pod); err != nil {
			return nil, false, fmt.Errorf("decoding Pod: %w", err)
		}
		// Objects from informers carry no TypeMeta; neither do ours, so a pod
		// looks the same whether it came alone or inside a list.
		pod.TypeMeta = metav1.TypeMeta{}
		return []*v1.Pod{pod}, false, nil
	}
	list := &v1.PodList{}
	if _, _, err := podDecoder.Decode(js, nil, list); err != nil {
		return nil, false, fmt.Errorf("decoding PodList: %w", err)
	}
	for i := range list.Items {
		item := list.Items[i]
		item.TypeMeta = metav1.TypeMeta{}
		pods = append(pods, &item)
	}
	return pods, false, nil
}
