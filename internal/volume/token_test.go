package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeTokens hands out "token-<n>" and records what it was asked.
type fakeTokens struct {
	n         int
	err       error
	asked     []string // namespace/name
	specs     []authenticationv1.TokenRequestSpec
	forgotten []types.UID
}

func (f *fakeTokens) ServiceAccountToken(_ context.Context, namespace, name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	f.asked = append(f.asked, namespace+"/"+name)
	f.specs = append(f.specs, spec)
	if f.err != nil {
		return nil, f.err
	}
	f.n++
	return &authenticationv1.TokenRequest{Spec: spec, Status: authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", f.n)}}, nil
}

func (f *fakeTokens) ForgetPod(uid types.UID) { f.forgotten = append(f.forgotten, uid) }

// kubeAPIAccess is the volume the API server's ServiceAccount admission adds.
func kubeAPIAccess() v1.Volume {
	exp := int64(3607)
	return v1.Volume{Name: "kube-api-access-x1", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: i32(0o644),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func TestTokenRequestSpec(t *testing.T) {
	pod, _ := testPod(nil, nil, nil)
	exp := int64(600)
	cases := []struct {
		name string
		src  v1.ServiceAccountTokenProjection
		want authenticationv1.TokenRequestSpec
	}{
		{name: "API server audience", src: v1.ServiceAccountTokenProjection{Path: "t"},
			want: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-1"}}},
		{name: "custom audience and lifetime", src: v1.ServiceAccountTokenProjection{Path: "t", Audience: "vault", ExpirationSeconds: &exp},
			want: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &exp, BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TokenRequestSpec(pod, &tc.src); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTokenFileMode(t *testing.T) {
	pod, _ := testPod(nil, nil, nil)
	if got := TokenFileMode(pod, 0o644); got != 0o644 {
		t.Fatalf("without fsGroup: %o, want the default mode", got)
	}
	gid := int64(2000)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	if got := TokenFileMode(pod, 0o644); got != 0o600 {
		t.Fatalf("with fsGroup: %o, want 0600", got)
	}
}

func TestProjectedServiceAccountToken(t *testing.T) {
	src := &fakeSources{cms: map[string]*v1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA PEM"}}}}
	tokens := &fakeTokens{}
	podsDir := t.TempDir()
	m := newManager(t, Config{PodsDir: podsDir, Sources: src, Tokens: tokens, NodeName: "n1"})
	pod, c := testPod([]v1.Volume{kubeAPIAccess()}, []v1.VolumeMount{{Name: "kube-api-access-x1", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}, nil)
	pod.Spec.ServiceAccountName = "robot"

	mounts, err := m.Mounts(pod, c)
	if err != nil {
		t.Fatal(err)
	}
	dir := mounts[0].HostPath
	if !strings.HasSuffix(dir, "kubernetes.io~projected/kube-api-access-x1") || !mounts[0].Readonly {
		t.Fatalf("mount %+v", mounts[0])
	}
	for file, want := range map[string]string{"token": "token-1", "ca.crt": "CA PEM", "namespace": "ns"} {
		if got := readThrough(t, dir, file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "token")); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("token file %v %v, want mode 0644", info, err)
	}
	if !reflect.DeepEqual(tokens.asked, []string{"ns/robot"}) || *tokens.specs[0].ExpirationSeconds != 3607 || tokens.specs[0].BoundObjectRef.UID != "uid-1" {
		t.Fatalf("asked %v specs %+v", tokens.asked, tokens.specs)
	}

	// A refresh asks again (the token source decides whether that means a
	// new token) and publishes the answer atomically.
	if err := m.Refresh(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if got := readThrough(t, dir, "token"); got != "token-2" {
		t.Fatalf("token after refresh = %q, want token-2", got)
	}

	// A failed token request fails the refresh and leaves the old token.
	tokens.err = errors.New("failed to fetch token: forbidden")
	if err := m.Refresh(context.Background(), pod); err == nil || !strings.Contains(err.Error(), "failed to fetch token: forbidden") {
		t.Fatalf("refresh err %v", err)
	}
	if got := readThrough(t, dir, "token"); got != "token-2" {
		t.Fatalf("token after failed refresh = %q, want token-2 kept", got)
	}

	// Tearing the pod down forgets its tokens.
	if err := m.TearDown("uid-1"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tokens.forgotten, []types.UID{"uid-1"}) {
		t.Fatalf("forgotten %v", tokens.forgotten)
	}
}

func TestProjectedServiceAccountTokenErrors(t *testing.T) {
	cases := []struct {
		name    string
		sa      string
		err     error
		wantErr string
	}{
		{name: "no service account name", wantErr: `serviceAccountToken projection "token": the pod has no serviceAccountName`},
		{name: "token request fails", sa: "default", err: errors.New(`failed to fetch token: serviceaccounts "default" is forbidden`),
			wantErr: `MountVolume.SetUp failed for volume "kube-api-access-x1" : failed to fetch token: serviceaccounts "default" is forbidden`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSources{cms: map[string]*v1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}}}
			m := newManager(t, Config{PodsDir: t.TempDir(), Sources: src, Tokens: &fakeTokens{err: tc.err}})
			pod, c := testPod([]v1.Volume{kubeAPIAccess()}, []v1.VolumeMount{{Name: "kube-api-access-x1", MountPath: "/sa"}}, nil)
			pod.Spec.ServiceAccountName = tc.sa
			if _, err := m.Mounts(pod, c); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
