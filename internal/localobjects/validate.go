package localobjects

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kind is the kind of a local object.
type Kind string

// The kinds a Store holds.
const (
	KindConfigMap Kind = "ConfigMap"
	KindSecret    Kind = "Secret"
)

// Resource is the kind's API resource name ("configmaps", "secrets").
func (k Kind) Resource() string {
	switch k {
	case KindConfigMap:
		return "configmaps"
	case KindSecret:
		return "secrets"
	}
	return ""
}

// Key names a local object.
type Key struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (k Key) String() string { return fmt.Sprintf("%s %s/%s", k.Kind, k.Namespace, k.Name) }

// KeyOf returns the key of a *v1.ConfigMap or *v1.Secret; ok is false for
// any other object.
func KeyOf(obj runtime.Object) (Key, bool) {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return Key{KindConfigMap, o.Namespace, o.Name}, true
	case *v1.Secret:
		return Key{KindSecret, o.Namespace, o.Name}, true
	}
	return Key{}, false
}

// Default fills in what the API server does on create: the namespace
// ("default" when unset, as for static pods), a Secret's type (Opaque),
// and a Secret's stringData merged into data (stringData wins, and is
// write-only: it is cleared). It mutates obj.
func Default(obj runtime.Object) {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
	case *v1.Secret:
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
		if o.Type == "" {
			o.Type = v1.SecretTypeOpaque
		}
		if len(o.StringData) > 0 {
			if o.Data == nil {
				o.Data = map[string][]byte{}
			}
			for k, v := range o.StringData {
				o.Data[k] = []byte(v)
			}
		}
		o.StringData = nil
	}
}

// Validate checks a defaulted object as the API server does on create
// (upstream's ValidateConfigMap and ValidateSecret): metadata, keys, the
// 1 MiB size limit and the keys a Secret's type requires.
func Validate(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return validateConfigMap(o)
	case *v1.Secret:
		return validateSecret(o)
	}
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("%T is not a ConfigMap or a Secret", obj))}
}

// ValidateUpdate checks newObj as a replacement of oldObj (same kind), as
// the API server does on update: a Secret's type never changes, and an
// immutable object keeps its data and stays immutable; then Validate.
func ValidateUpdate(newObj, oldObj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	immutable := func(oldFlag, newFlag *bool, same map[string]bool) {
		if oldFlag == nil || !*oldFlag {
			return
		}
		if newFlag == nil || !*newFlag {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		for _, name := range []string{"data", "binaryData"} {
			if ok, checked := same[name]; checked && !ok {
				errs = append(errs, field.Forbidden(field.NewPath(name), "field is immutable when `immutable` is set"))
			}
		}
	}
	switch n := newObj.(type) {
	case *v1.ConfigMap:
		o, ok := oldObj.(*v1.ConfigMap)
		if !ok {
			break
		}
		immutable(o.Immutable, n.Immutable, map[string]bool{
			"data":       reflect.DeepEqual(n.Data, o.Data),
			"binaryData": reflect.DeepEqual(n.BinaryData, o.BinaryData),
		})
	case *v1.Secret:
		o, ok := oldObj.(*v1.Secret)
		if !ok {
			break
		}
		if n.Type != o.Type {
			errs = append(errs, field.Invalid(field.NewPath("type"), n.Type, apivalidation.FieldImmutableErrorMsg))
		}
		immutable(o.Immutable, n.Immutable, map[string]bool{"data": reflect.DeepEqual(n.Data, o.Data)})
	}
	return append(errs, Validate(newObj)...)
}

func validateMeta(meta *metav1.ObjectMeta) field.ErrorList {
	return apivalidation.ValidateObjectMeta(meta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

func validateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := validateMeta(&cm.ObjectMeta)
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(cm.BinaryData[key])
	}
	if total > v1.MaxSecretSize {
		// "" refers to the whole object, as upstream.
		errs = append(errs, field.TooLong(field.NewPath(""), "", v1.MaxSecretSize))
	}
	return errs
}

func validateSecret(s *v1.Secret) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta)
	data := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(data.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	if total > v1.MaxSecretSize {
		errs = append(errs, field.TooLong(data, "", v1.MaxSecretSize))
	}
	wellFormedJSON := func(key string) {
		raw, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(data.Key(key), ""))
			return
		}
		if err := json.Unmarshal(raw, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(data.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		if s.Annotations[v1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(v1.ServiceAccountNameKey), ""))
		}
	case v1.SecretTypeDockercfg:
		wellFormedJSON(v1.DockerConfigKey)
	case v1.SecretTypeDockerConfigJson:
		wellFormedJSON(v1.DockerConfigJsonKey)
	case v1.SecretTypeBasicAuth:
		_, user := s.Data[v1.BasicAuthUsernameKey]
		_, pass := s.Data[v1.BasicAuthPasswordKey]
		// Either may be empty, but one must be there.
		if !user && !pass {
			errs = append(errs, field.Required(data.Key(v1.BasicAuthUsernameKey), ""),
				field.Required(data.Key(v1.BasicAuthPasswordKey), ""))
		}
	case v1.SecretTypeSSHAuth:
		if len(s.Data[v1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(data.Key(v1.SSHAuthPrivateKey), ""))
		}
	case v1.SecretTypeTLS:
		if _, ok := s.Data[v1.TLSCertKey]; !ok {
			errs = append(errs, field.Required(data.Key(v1.TLSCertKey), ""))
		}
		if _, ok := s.Data[v1.TLSPrivateKeyKey]; !ok {
			errs = append(errs, field.Required(data.Key(v1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
