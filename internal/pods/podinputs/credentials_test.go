package podinputs

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
	"github.com/seed-kubelet/kubelet/internal/runtime/imageref"
)

func TestKeyringLookup(t *testing.T) {
	// Each entry's username is its location, so results name the match.
	ring := func(locs ...string) *keyring {
		cfg := dockerConfig{}
		for _, l := range locs {
			cfg[l] = dockerConfigEntry{Username: l, Password: "pw"}
		}
		k := &keyring{}
		if err := k.add(cfg); err != nil {
			t.Fatal(err)
		}
		return k
	}
	tests := []struct {
		name  string
		locs  []string
		image string
		want  []string // usernames, in order
	}{
		{name: "exact host", locs: []string{"registry.example.com"}, image: "registry.example.com/app:1", want: []string{"registry.example.com"}},
		{name: "scheme and API path are stripped", locs: []string{"https://registry.example.com/v2/"}, image: "registry.example.com/team/app", want: []string{"https://registry.example.com/v2/"}},
		{name: "http scheme", locs: []string{"http://registry.example.com"}, image: "registry.example.com/app", want: []string{"http://registry.example.com"}},
		{name: "host with port", locs: []string{"registry.example.com:5000"}, image: "registry.example.com:5000/app", want: []string{"registry.example.com:5000"}},
		{name: "port must match", locs: []string{"registry.example.com:5000"}, image: "registry.example.com/app", want: nil},
		{name: "key without port does not match a port", locs: []string{"registry.example.com"}, image: "registry.example.com:5000/app", want: nil},
		{name: "glob host", locs: []string{"*.example.com"}, image: "eu.example.com/app", want: []string{"*.example.com"}},
		{name: "glob matches one label only", locs: []string{"*.example.com"}, image: "a.eu.example.com/app", want: nil},
		{name: "glob in the middle", locs: []string{"registry.*.example.com"}, image: "registry.eu.example.com/app", want: []string{"registry.*.example.com"}},
		{name: "glob with port", locs: []string{"*.example.com:443"}, image: "eu.example.com:443/app", want: []string{"*.example.com:443"}},
		{
			name:  "path prefix, most specific first",
			locs:  []string{"quay.io", "quay.io/coreos", "quay.io/other"},
			image: "quay.io/coreos/etcd:v3",
			want:  []string{"quay.io/coreos", "quay.io"},
		},
		{name: "path is a plain string prefix", locs: []string{"quay.io/core"}, image: "quay.io/coreos/etcd", want: []string{"quay.io/core"}},
		{name: "different host", locs: []string{"quay.io"}, image: "gcr.io/app", want: nil},
		{name: "docker.io key for a bare image", locs: []string{"docker.io"}, image: "busybox", want: []string{"docker.io"}},
		{name: "index.docker.io/v1/ key for a bare image", locs: []string{"https://index.docker.io/v1/"}, image: "busybox:latest", want: []string{"https://index.docker.io/v1/"}},
		{name: "index.docker.io key for a user image", locs: []string{"index.docker.io"}, image: "user/app", want: []string{"index.docker.io"}},
		{name: "index.docker.io key for docker.io image", locs: []string{"index.docker.io"}, image: "docker.io/user/app", want: []string{"index.docker.io"}},
		{name: "docker hub key does not apply to other registries", locs: []string{"https://index.docker.io/v1/"}, image: "quay.io/app", want: nil},
		{name: "docker hub fallback only when nothing else matches", locs: []string{"index.docker.io", "docker.io/library"}, image: "busybox", want: []string{"docker.io/library"}},
		{name: "no match", locs: []string{"registry.example.com"}, image: "busybox", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range ring(tc.locs...).lookup(imageref.Repository(tc.image)) {
				got = append(got, a.Username)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lookup(%q) = %q, want %q", tc.image, got, tc.want)
			}
		})
	}
}

func TestAuthConfig(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	raw := base64.RawStdEncoding.EncodeToString
	tests := []struct {
		name    string
		entry   dockerConfigEntry
		want    *runtimeapi.AuthConfig
		wantErr bool
	}{
		{
			name:  "username and password",
			entry: dockerConfigEntry{Username: "u", Password: "p"},
			want:  &runtimeapi.AuthConfig{Username: "u", Password: "p"},
		},
		{
			name:  "padded auth wins over username and password",
			entry: dockerConfigEntry{Username: "ignored", Password: "ignored", Auth: b64([]byte("user:pa:ss"))},
			want:  &runtimeapi.AuthConfig{Username: "user", Password: "pa:ss", Auth: b64([]byte("user:pa:ss"))},
		},
		{
			name:  "unpadded auth is re-encoded padded",
			entry: dockerConfigEntry{Auth: raw([]byte("user:p"))},
			want:  &runtimeapi.AuthConfig{Username: "user", Password: "p", Auth: b64([]byte("user:p"))},
		},
		{
			name:  "tokens",
			entry: dockerConfigEntry{Username: "<token>", IdentityToken: "id-tok", RegistryToken: "reg-tok"},
			want:  &runtimeapi.AuthConfig{Username: "<token>", IdentityToken: "id-tok", RegistryToken: "reg-tok"},
		},
		{name: "auth without colon", entry: dockerConfigEntry{Auth: b64([]byte("nocolon"))}, wantErr: true},
		{name: "auth not base64", entry: dockerConfigEntry{Auth: "!!!"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.entry.authConfig()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func pullSecret(name string, typ v1.SecretType, key, data string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Type:       typ,
		Data:       map[string][]byte{key: []byte(data)},
	}
}

type recordedEvent struct{ eventtype, reason, message string }

type fakeRecorder struct{ events []recordedEvent }

func (r *fakeRecorder) Eventf(_ runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.events = append(r.events, recordedEvent{eventtype, reason, fmt.Sprintf(messageFmt, args...)})
}

func TestCredentials(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("auth-user:auth-pass"))
	secrets := []runtime.Object{
		pullSecret("json", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey,
			`{"auths":{"registry.example.com":{"username":"json-user","password":"json-pass"},"https://index.docker.io/v1/":{"auth":"`+auth+`"}}}`),
		pullSecret("cfg", v1.SecretTypeDockercfg, v1.DockerConfigKey,
			`{"registry.example.com/team":{"username":"cfg-user","password":"cfg-pass","email":"a@b.c"},"quay.io":{"auth":"`+auth+`"}}`),
		pullSecret("malformed", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":`),
		pullSecret("bad-auth", v1.SecretTypeDockercfg, v1.DockerConfigKey,
			`{"gcr.io":{"auth":"bm9jb2xvbg=="},"quay.io":{"username":"never","password":"used"}}`),
		pullSecret("wrong-type", v1.SecretTypeOpaque, v1.DockerConfigJsonKey, `{"auths":{"quay.io":{"username":"opaque"}}}`),
		pullSecret("wrong-key", v1.SecretTypeDockercfg, v1.DockerConfigJsonKey, `{"quay.io":{"username":"wrong-key"}}`),
	}
	refs := func(names ...string) []v1.LocalObjectReference {
		var out []v1.LocalObjectReference
		for _, n := range names {
			out = append(out, v1.LocalObjectReference{Name: n})
		}
		return out
	}
	up := func(u, p string) *runtimeapi.AuthConfig { return &runtimeapi.AuthConfig{Username: u, Password: p} }
	fromAuth := &runtimeapi.AuthConfig{Username: "auth-user", Password: "auth-pass", Auth: auth}

	tests := []struct {
		name       string
		secrets    []v1.LocalObjectReference
		image      string
		want       []*runtimeapi.AuthConfig
		wantEvents []recordedEvent
	}{
		{
			name:    "dockerconfigjson host match",
			secrets: refs("json"),
			image:   "registry.example.com/app:1",
			want:    []*runtimeapi.AuthConfig{up("json-user", "json-pass")},
		},
		{
			name:    "dockercfg path beats the other secret's host",
			secrets: refs("json", "cfg"),
			image:   "registry.example.com/team/app",
			want:    []*runtimeapi.AuthConfig{up("cfg-user", "cfg-pass"), up("json-user", "json-pass")},
		},
		{
			name:    "dockercfg auth field",
			secrets: refs("cfg"),
			image:   "quay.io/org/app",
			want:    []*runtimeapi.AuthConfig{fromAuth},
		},
		{
			name:    "docker hub default from index.docker.io/v1/",
			secrets: refs("json"),
			image:   "nginx",
			want:    []*runtimeapi.AuthConfig{fromAuth},
		},
		{
			name:    "no match",
			secrets: refs("json", "cfg"),
			image:   "gcr.io/project/app",
			want:    nil,
		},
		{
			name:    "malformed, wrong type and wrong key secrets are skipped",
			secrets: refs("malformed", "bad-auth", "wrong-type", "wrong-key", "cfg"),
			image:   "quay.io/org/app",
			want:    []*runtimeapi.AuthConfig{fromAuth},
		},
		{
			name:    "missing secrets are skipped and reported, empty names ignored",
			secrets: refs("", "gone", "json", "also-gone"),
			image:   "registry.example.com/app",
			want:    []*runtimeapi.AuthConfig{up("json-user", "json-pass")},
			wantEvents: []recordedEvent{{v1.EventTypeWarning, ReasonFailedToRetrieveImagePullSecret,
				"Unable to retrieve some image pull secrets (gone, also-gone); attempting to pull the image may not succeed."}},
		},
		{
			name:  "no pull secrets",
			image: "registry.example.com/app",
			want:  nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			s := New(Config{Client: kubeclienttest.Wrap(fake.NewClientset(secrets...)), Recorder: rec})
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
				Spec:       v1.PodSpec{ImagePullSecrets: tc.secrets},
			}
			got := s.Credentials(context.Background(), pod, tc.image)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("credentials:\n got  %v\n want %v", got, tc.want)
			}
			if !reflect.DeepEqual(rec.events, tc.wantEvents) {
				t.Errorf("events:\n got  %v\n want %v", rec.events, tc.wantEvents)
			}
		})
	}
}

func TestCredentialsWithoutRecorder(t *testing.T) {
	s := New(Config{Client: kubeclienttest.Wrap(fake.NewClientset())})
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec:       v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "gone"}}},
	}
	if got := s.Credentials(context.Background(), pod, "busybox"); got != nil {
		t.Fatalf("got %v, want none", got)
	}
}
