package credentialprovider

import (
	"encoding/base64"
	"reflect"
	"testing"

	"github.com/seed-kubelet/kubelet/internal/runtime/imageref"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestKeyringLookup(t *testing.T) {
	// Each entry's username is its location, so results name the match.
	ring := func(locs ...string) *Keyring {
		cfg := DockerConfig{}
		for _, l := range locs {
			cfg[l] = DockerConfigEntry{Username: l, Password: "pw"}
		}
		k := &Keyring{}
		if err := k.Add(cfg); err != nil {
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
			for _, a := range ring(tc.locs...).Lookup(imageref.Repository(tc.image)) {
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
		entry   DockerConfigEntry
		want    *runtimeapi.AuthConfig
		wantErr bool
	}{
		{
			name:  "username and password",
			entry: DockerConfigEntry{Username: "u", Password: "p"},
			want:  &runtimeapi.AuthConfig{Username: "u", Password: "p"},
		},
		{
			name:  "padded auth wins over username and password",
			entry: DockerConfigEntry{Username: "ignored", Password: "ignored", Auth: b64([]byte("user:pa:ss"))},
			want:  &runtimeapi.AuthConfig{Username: "user", Password: "pa:ss", Auth: b64([]byte("user:pa:ss"))},
		},
		{
			name:  "unpadded auth is re-encoded padded",
			entry: DockerConfigEntry{Auth: raw([]byte("user:p"))},
			want:  &runtimeapi.AuthConfig{Username: "user", Password: "p", Auth: b64([]byte("user:p"))},
		},
		{
			name:  "tokens",
			entry: DockerConfigEntry{Username: "<token>", IdentityToken: "id-tok", RegistryToken: "reg-tok"},
			want:  &runtimeapi.AuthConfig{Username: "<token>", IdentityToken: "id-tok", RegistryToken: "reg-tok"},
		},
		{name: "auth without colon", entry: DockerConfigEntry{Auth: b64([]byte("nocolon"))}, wantErr: true},
		{name: "auth not base64", entry: DockerConfigEntry{Auth: "!!!"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.entry.AuthConfig()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
