package criconfig

import (
	"context"
	"fmt"
	"io/fs"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func ptr[T any](v T) *T { return &v }

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// testPod is a defaulted-looking pod with one container "app".
func testPod(mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "hi"},
		},
		Spec: v1.PodSpec{
			NodeName:                      "node-a",
			ServiceAccountName:            "default",
			DNSPolicy:                     v1.DNSClusterFirst,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			EnableServiceLinks:            ptr(true),
			SecurityContext:               &v1.PodSecurityContext{},
			Containers: []v1.Container{{
				Name:                     "app",
				Image:                    "nginx:1.27",
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
			}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// files is an Options.ReadFile over an in-memory file set.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		if s, ok := m[path]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}
}

// fakeEnvSource serves config maps and secrets of one namespace.
type fakeEnvSource struct {
	configMaps map[string]map[string]string
	secrets    map[string]map[string]string
	services   map[string]string
	// servicesErr fails ServiceEnv (the API server is down).
	servicesErr error
	calls       int
}

func (f *fakeEnvSource) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.calls++
	d, ok := f.configMaps[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: d}, nil
}

func (f *fakeEnvSource) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.calls++
	d, ok := f.secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range d {
		s.Data[k] = []byte(v)
	}
	return s, nil
}

func (f *fakeEnvSource) ServiceEnv(_ context.Context, _ string, links bool) (map[string]string, error) {
	if f.servicesErr != nil {
		return nil, f.servicesErr
	}
	if !links {
		return map[string]string{"KUBERNETES_SERVICE_HOST": f.services["KUBERNETES_SERVICE_HOST"]}, nil
	}
	return f.services, nil
}
