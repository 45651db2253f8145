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
)

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
