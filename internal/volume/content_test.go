package volume

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

func i32(v int32) *int32 { return &v }

func TestConfigMapAndSecretPayload(t *testing.T) {
	cm := &v1.ConfigMap{Data: map[string]string{"a": "A", "b": "B"}, BinaryData: map[string][]byte{"bin": {1, 2}}}
	sec := &v1.Secret{Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}}
	cases := []struct {
		name    string
		build   func() (map[string]FileProjection, error)
		want    map[string]FileProjection
		wantErr string
	}{
		{
			name:  "configmap all keys default mode",
			build: func() (map[string]FileProjection, error) { return ConfigMapPayload(cm, nil, 0o640, false) },
			want:  map[string]FileProjection{"a": {[]byte("A"), 0o640}, "b": {[]byte("B"), 0o640}, "bin": {[]byte{1, 2}, 0o640}},
		},
		{
			name: "configmap items with path and mode",
			build: func() (map[string]FileProjection, error) {
				return ConfigMapPayload(cm, []v1.KeyToPath{{Key: "a", Path: "dir/a.txt", Mode: i32(0o400)}, {Key: "b", Path: "b"}}, 0o644, false)
			},
			want: map[string]FileProjection{"dir/a.txt": {[]byte("A"), 0o400}, "b": {[]byte("B"), 0o644}},
		},
		{
			name: "configmap missing key",
			build: func() (map[string]FileProjection, error) {
				return ConfigMapPayload(cm, []v1.KeyToPath{{Key: "zz", Path: "z"}}, 0o644, false)
			},
			wantErr: "configmap references non-existent config key: zz",
		},
		{
			name: "configmap missing key optional",
			build: func() (map[string]FileProjection, error) {
				return ConfigMapPayload(cm, []v1.KeyToPath{{Key: "zz", Path: "z"}}, 0o644, true)
			},
			want: map[string]FileProjection{},
		},
		{
			name:  "missing optional configmap is empty",
			build: func() (map[string]FileProjection, error) { return ConfigMapPayload(nil, nil, 0o644, true) },
			want:  map[string]FileProjection{},
		},
		{
			name: "secret items",
			build: func() (map[string]FileProjection, error) {
				return SecretPayload(sec, []v1.KeyToPath{{Key: "pass", Path: "pw", Mode: i32(0o600)}}, 0o644, false)
			},
			want: map[string]FileProjection{"pw": {[]byte("p"), 0o600}},
		},
		{
			name: "secret missing key",
			build: func() (map[string]FileProjection, error) {
				return SecretPayload(sec, []v1.KeyToPath{{Key: "nope", Path: "n"}}, 0o644, false)
			},
			wantErr: "references non-existent secret key: nope",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.build()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDownwardAPIPayload(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"b": "2", "a": "1"}, Annotations: map[string]string{"k": `q"v`}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		}}, {Name: "nolimits"}}},
	}
	// Missing limits read as the node's allocatable, as upstream.
	opts := &criconfig.Options{NodeAllocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("3Gi")}
	}}
	field := func(p string) v1.DownwardAPIVolumeFile {
		return v1.DownwardAPIVolumeFile{Path: "f", FieldRef: &v1.ObjectFieldSelector{FieldPath: p}}
	}
	resOf := func(ctr, r, div string) v1.DownwardAPIVolumeFile {
		s := &v1.ResourceFieldSelector{ContainerName: ctr, Resource: r}
		if div != "" {
			s.Divisor = resource.MustParse(div)
		}
		return v1.DownwardAPIVolumeFile{Path: "f", ResourceFieldRef: s}
	}
	res := func(r, div string) v1.DownwardAPIVolumeFile { return resOf("c", r, div) }
	cases := []struct {
		name    string
		item    v1.DownwardAPIVolumeFile
		want    string
		wantErr bool
	}{
		{"name", field("metadata.name"), "p", false},
		{"namespace", field("metadata.namespace"), "ns", false},
		{"uid", field("metadata.uid"), "u1", false},
		{"labels sorted", field("metadata.labels"), "a=\"1\"\nb=\"2\"", false},
		{"annotations quoted", field("metadata.annotations"), `k="q\"v"`, false},
		{"single label", field("metadata.labels['b']"), "2", false},
		{"unsupported field", field("spec.nodeName"), "", true},
		{"cpu limit cores rounded up", res("limits.cpu", ""), "2", false},
		{"cpu limit millicores", res("limits.cpu", "1m"), "1500", false},
		{"memory limit Mi", res("limits.memory", "1Mi"), "64", false},
		{"cpu request", res("requests.cpu", "1m"), "250", false},
		{"bad resource", res("limits.gpu", ""), "", true},
		{"no memory limit: allocatable", resOf("nolimits", "limits.memory", "1Mi"), "3072", false},
		{"no cpu limit: allocatable", resOf("nolimits", "limits.cpu", "1m"), "3000", false},
		{"unknown container", resOf("ghost", "limits.cpu", ""), "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DownwardAPIPayload(pod, []v1.DownwardAPIVolumeFile{tc.item}, 0o644, opts.ResourceFieldValue)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got["f"].Data) != tc.want {
				t.Fatalf("got %q, want %q", got["f"].Data, tc.want)
			}
		})
	}
}
