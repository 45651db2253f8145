package localobjects

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func cm(name string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
}

func secret(name string, typ v1.SecretType, data map[string]string) *v1.Secret {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestDefault(t *testing.T) {
	c := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	Default(c)
	if c.Namespace != "default" {
		t.Errorf("config map namespace = %q, want default", c.Namespace)
	}
	s := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Data:       map[string][]byte{"a": []byte("from-data"), "b": []byte("kept")},
		StringData: map[string]string{"a": "from-stringData", "c": "new"},
	}
	Default(s)
	if s.Namespace != "ns" || s.Type != v1.SecretTypeOpaque || s.StringData != nil {
		t.Errorf("secret defaults: namespace %q type %q stringData %v", s.Namespace, s.Type, s.StringData)
	}
	want := map[string]string{"a": "from-stringData", "b": "kept", "c": "new"}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
		}
	}
}

// Cases of upstream's TestValidateConfigMap and TestValidateSecret; want is
// the field error text (every error's, joined), "" for valid.
func TestValidate(t *testing.T) {
	big := strings.Repeat("x", v1.MaxSecretSize+1)
	tests := []struct {
		name string
		obj  runtime.Object
		want []string
	}{
		{name: "valid config map", obj: cm("valid", map[string]string{"key": "value", "file.txt": "x", "-_.a": "y"})},
		{name: "valid config map with binary data", obj: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		{name: "config map name", obj: cm("NotValid", nil), want: []string{"metadata.name: Invalid value: \"NotValid\": a lowercase RFC 1123 subdomain"}},
		{name: "config map without namespace", obj: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, want: []string{"metadata.namespace: Required value"}},
		{name: "config map key with slash", obj: cm("k", map[string]string{"a/b": "v"}), want: []string{"data[a/b]: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"}},
		{name: "config map key ..", obj: cm("k", map[string]string{"..": "v"}), want: []string{"data[..]: Invalid value: \"..\": must not be '..'"}},
		{name: "config map key twice", obj: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"k": {1}}},
			want: []string{"data[k]: Invalid value: \"k\": duplicate of key present in binaryData"}},
		{name: "config map too large", obj: cm("big", map[string]string{"k": big}), want: []string{"Too long: may not be more than 1048576 bytes"}},
		{name: "opaque secret", obj: secret("s", v1.SecretTypeOpaque, map[string]string{"k": "v"})},
		{name: "secret key", obj: secret("s", v1.SecretTypeOpaque, map[string]string{"a b": "v"}), want: []string{"data[a b]: Invalid value: \"a b\""}},
		{name: "secret too large", obj: secret("s", v1.SecretTypeOpaque, map[string]string{"k": big}), want: []string{"data: Too long: may not be more than 1048576 bytes"}},
		{name: "dockerconfigjson", obj: secret("s", v1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": `{"auths":{}}`})},
		{name: "dockerconfigjson without its key", obj: secret("s", v1.SecretTypeDockerConfigJson, map[string]string{"other": "{}"}),
			want: []string{"data[.dockerconfigjson]: Required value"}},
		{name: "dockerconfigjson not JSON", obj: secret("s", v1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "{"}),
			want: []string{"data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": unexpected end of JSON input"}},
		{name: "dockercfg without its key", obj: secret("s", v1.SecretTypeDockercfg, nil), want: []string{"data[.dockercfg]: Required value"}},
		{name: "basic-auth with a username only", obj: secret("s", v1.SecretTypeBasicAuth, map[string]string{"username": ""})},
		{name: "basic-auth without either", obj: secret("s", v1.SecretTypeBasicAuth, nil),
			want: []string{"data[username]: Required value", "data[password]: Required value"}},
		{name: "ssh-auth without a key", obj: secret("s", v1.SecretTypeSSHAuth, map[string]string{"ssh-privatekey": ""}), want: []string{"data[ssh-privatekey]: Required value"}},
		{name: "tls", obj: secret("s", v1.SecretTypeTLS, map[string]string{"tls.crt": "c", "tls.key": "k"})},
		{name: "tls without key", obj: secret("s", v1.SecretTypeTLS, map[string]string{"tls.crt": "c"}), want: []string{"data[tls.key]: Required value"}},
		{name: "service account token without its annotation", obj: secret("s", v1.SecretTypeServiceAccountToken, nil),
			want: []string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
		{name: "custom type", obj: secret("s", "example.com/custom", nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.obj)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d %q", len(errs), errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	immutableCM := func(data map[string]string, immutable *bool) *v1.ConfigMap {
		c := cm("c", data)
		c.Immutable = immutable
		return c
	}
	immutableSecret := func(typ v1.SecretType, data map[string]string, immutable *bool) *v1.Secret {
		s := secret("s", typ, data)
		s.Immutable = immutable
		return s
	}
	tests := []struct {
		name     string
		old, new runtime.Object
		want     []string
	}{
		{name: "mutable data changes", old: cm("c", map[string]string{"a": "1"}), new: cm("c", map[string]string{"a": "2"})},
		{name: "made immutable", old: cm("c", nil), new: immutableCM(nil, ptr.To(true))},
		{name: "immutable, same data", old: immutableCM(map[string]string{"a": "1"}, ptr.To(true)), new: immutableCM(map[string]string{"a": "1"}, ptr.To(true))},
		{name: "immutable data changed", old: immutableCM(map[string]string{"a": "1"}, ptr.To(true)), new: immutableCM(map[string]string{"a": "2"}, ptr.To(true)),
			want: []string{"data: Forbidden: field is immutable when `immutable` is set"}},
		{name: "immutable unset", old: immutableCM(nil, ptr.To(true)), new: immutableCM(nil, ptr.To(false)),
			want: []string{"immutable: Forbidden: field is immutable when `immutable` is set"}},
		{name: "secret type changed", old: secret("s", v1.SecretTypeOpaque, nil), new: secret("s", v1.SecretTypeBasicAuth, map[string]string{"username": "u"}),
			want: []string{"type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"}},
		{name: "immutable secret data changed", old: immutableSecret(v1.SecretTypeOpaque, map[string]string{"a": "1"}, ptr.To(true)),
			new: immutableSecret(v1.SecretTypeOpaque, map[string]string{"a": "2"}, ptr.To(true)), want: []string{"data: Forbidden"}},
		{name: "update still validated", old: cm("c", nil), new: cm("c", map[string]string{"a/b": "x"}), want: []string{"data[a/b]: Invalid value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateUpdate(tc.new, tc.old)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d %q", len(errs), errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}
