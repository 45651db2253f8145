package volume

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

const defaultFileMode int32 = 0o644

func modeOr(m *int32, def int32) int32 {
	if m != nil {
		return *m
	}
	return def
}

// keyedPayload maps a source's keys to files: every key when items is empty,
// otherwise only the listed keys (a missing key is an error unless optional).
func keyedPayload(data map[string][]byte, items []v1.KeyToPath, defaultMode int32, optional bool, missingKey string) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	if len(items) == 0 {
		for k, b := range data {
			out[k] = FileProjection{Data: b, Mode: defaultMode}
		}
		return out, nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: %v", missingKey, it.Key)
		}
		out[it.Path] = FileProjection{Data: b, Mode: modeOr(it.Mode, defaultMode)}
	}
	return out, nil
}

// ConfigMapPayload builds the files of a configMap volume (or projection).
// A nil cm means the config map does not exist and the source is optional.
func ConfigMapPayload(cm *v1.ConfigMap, items []v1.KeyToPath, defaultMode int32, optional bool) (map[string]FileProjection, error) {
	if cm == nil {
		return map[string]FileProjection{}, nil
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return keyedPayload(data, items, defaultMode, optional, "configmap references non-existent config key")
}

// SecretPayload builds the files of a secret volume (or projection).
// A nil s means the secret does not exist and the source is optional.
func SecretPayload(s *v1.Secret, items []v1.KeyToPath, defaultMode int32, optional bool) (map[string]FileProjection, error) {
	if s == nil {
		return map[string]FileProjection{}, nil
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, b := range s.Data {
		data[k] = b
	}
	for k, v := range s.StringData {
		if _, ok := data[k]; !ok {
			data[k] = []byte(v)
		}
	}
	return keyedPayload(data, items, defaultMode, optional, "references non-existent secret key")
}

// ResourceFieldFunc resolves a container's resourceFieldRef (limits default
// to the node's allocatable, as for environment variables).
type ResourceFieldFunc func(pod *v1.Pod, ref *v1.ResourceFieldSelector) (string, error)

// DownwardAPIPayload builds the files of a downwardAPI volume (or projection).
func DownwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode int32, resourceField ResourceFieldFunc) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	for _, it := range items {
		var (
			val string
			err error
		)
		switch {
		case it.FieldRef != nil:
			val, err = podFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			if resourceField == nil {
				err = fmt.Errorf("resourceFieldRef is not available here")
				break
			}
			val, err = resourceField(pod, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("downwardAPI item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		out[it.Path] = FileProjection{Data: []byte(val), Mode: modeOr(it.Mode, defaultMode)}
	}
	return out, nil
}

func podFieldValue(pod *v1.Pod, path string) (string, error) {
	v, ok, err := criconfig.MetadataFieldValue(pod, path)
	if err == nil && !ok {
		err = fmt.Errorf("unsupported fieldPath: %s", path)
	}
	return v, err
}
