package podinputs

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

// calls counts the fake client's actions with verb on resource.
func calls(cs *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func newTestSource(objs ...runtime.Object) (*Source, *fake.Clientset, *clocktesting.FakeClock) {
	cs := fake.NewClientset(objs...)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return New(Config{Client: kubeclienttest.Wrap(cs), Clock: clk, TTL: time.Minute}), cs, clk
}

func TestNewDefaults(t *testing.T) {
	s := New(Config{Client: kubeclienttest.Wrap(fake.NewClientset())})
	if s.ttl != DefaultTTL || s.serviceTTL != DefaultServiceTTL {
		t.Fatalf("ttl %v serviceTTL %v, want %v and %v", s.ttl, s.serviceTTL, DefaultTTL, DefaultServiceTTL)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New without a client did not panic")
		}
	}()
	New(Config{})
}

// getter reads one kind of object through the Source and returns a value
// that changes with the object's content.
type getter func(ctx context.Context, s *Source, ns, name string) (string, error)

func getConfigMap(ctx context.Context, s *Source, ns, name string) (string, error) {
	cm, err := s.ConfigMap(ctx, ns, name)
	if err != nil {
		return "", err
	}
	return cm.Data["k"], nil
}

func getSecret(ctx context.Context, s *Source, ns, name string) (string, error) {
	sec, err := s.Secret(ctx, ns, name)
	if err != nil {
		return "", err
	}
	return string(sec.Data["k"]), nil
}

func TestObjectTTLCache(t *testing.T) {
	kinds := []struct {
		name     string
		resource string
		obj      func(value string) runtime.Object
		update   func(ctx context.Context, cs *fake.Clientset, value string) error
		get      getter
	}{
		{
			name:     "configmap",
			resource: "configmaps",
			obj: func(v string) runtime.Object {
				return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": v}}
			},
			update: func(ctx context.Context, cs *fake.Clientset, v string) error {
				_, err := cs.CoreV1().ConfigMaps("ns").Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": v}}, metav1.UpdateOptions{})
				return err
			},
			get: getConfigMap,
		},
		{
			name:     "secret",
			resource: "secrets",
			obj: func(v string) runtime.Object {
				return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string][]byte{"k": []byte(v)}}
			},
			update: func(ctx context.Context, cs *fake.Clientset, v string) error {
				_, err := cs.CoreV1().Secrets("ns").Update(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string][]byte{"k": []byte(v)}}, metav1.UpdateOptions{})
				return err
			},
			get: getSecret,
		},
	}
	steps := []struct {
		name      string
		advance   time.Duration
		update    string // new value written to the API before the read, if any
		want      string
		wantCalls int // total GETs so far
	}{
		{name: "first read goes to the API", want: "v1", wantCalls: 1},
		{name: "read within TTL is served from cache", advance: 30 * time.Second, update: "v2", want: "v1", wantCalls: 1},
		{name: "still within TTL just before expiry", advance: 29 * time.Second, want: "v1", wantCalls: 1},
		{name: "read at TTL expiry refetches", advance: time.Second, want: "v2", wantCalls: 2},
		{name: "fresh again after the refetch", advance: 59 * time.Second, update: "v3", want: "v2", wantCalls: 2},
		{name: "refetch after the second TTL", advance: time.Minute, want: "v3", wantCalls: 3},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			ctx := context.Background()
			s, cs, clk := newTestSource(kind.obj("v1"))
			for _, step := range steps {
				clk.Step(step.advance)
				if step.update != "" {
					if err := kind.update(ctx, cs, step.update); err != nil {
						t.Fatal(err)
					}
				}
				got, err := kind.get(ctx, s, "ns", "cfg")
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if got != step.want {
					t.Errorf("%s: value %q, want %q", step.name, got, step.want)
				}
				if n := calls(cs, "get", kind.resource); n != step.wantCalls {
					t.Errorf("%s: %d GETs, want %d", step.name, n, step.wantCalls)
				}
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	tests := []struct {
		name     string
		resource string
		get      getter
		create   func(ctx context.Context, cs *fake.Clientset) error
	}{
		{
			name: "configmap", resource: "configmaps", get: getConfigMap,
			create: func(ctx context.Context, cs *fake.Clientset) error {
				_, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "missing"}, Data: map[string]string{"k": "now"}}, metav1.CreateOptions{})
				return err
			},
		},
		{
			name: "secret", resource: "secrets", get: getSecret,
			create: func(ctx context.Context, cs *fake.Clientset) error {
				_, err := cs.CoreV1().Secrets("ns").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "missing"}, Data: map[string][]byte{"k": []byte("now")}}, metav1.CreateOptions{})
				return err
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, cs, _ := newTestSource()
			_, err := tc.get(ctx, s, "ns", "missing")
			if !apierrors.IsNotFound(err) {
				t.Fatalf("err = %v, want NotFound", err)
			}
			var status *apierrors.StatusError
			if !errors.As(err, &status) {
				t.Fatalf("err %T does not unwrap to a StatusError", err)
			}
			// NotFound is not served from cache: the object is seen as
			// soon as it exists, without waiting for the TTL.
			if err := tc.create(ctx, cs); err != nil {
				t.Fatal(err)
			}
			got, err := tc.get(ctx, s, "ns", "missing")
			if err != nil || got != "now" {
				t.Fatalf("after create: %q, %v", got, err)
			}
			if n := calls(cs, "get", tc.resource); n != 2 {
				t.Fatalf("%d GETs, want 2", n)
			}
		})
	}
}

func TestCacheFailures(t *testing.T) {
	boom := errors.New("connection refused")
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", ResourceVersion: "10"}, Data: map[string]string{"k": "cached"}}
	tests := []struct {
		name    string
		objs    []runtime.Object
		reactor func() (runtime.Object, error) // answers GETs after the first read
		want    string
		wantErr func(error) bool
	}{
		{
			name:    "failed refresh serves the cached copy",
			objs:    []runtime.Object{cm},
			reactor: func() (runtime.Object, error) { return nil, boom },
			want:    "cached",
		},
		{
			name: "older copy from the apiserver cache is ignored",
			objs: []runtime.Object{cm},
			reactor: func() (runtime.Object, error) {
				old := cm.DeepCopy()
				old.ResourceVersion = "9"
				old.Data["k"] = "older"
				return old, nil
			},
			want: "cached",
		},
		{
			name: "newer copy replaces the cached one",
			objs: []runtime.Object{cm},
			reactor: func() (runtime.Object, error) {
				newer := cm.DeepCopy()
				newer.ResourceVersion = "11"
				newer.Data["k"] = "newer"
				return newer, nil
			},
			want: "newer",
		},
		{
			name:    "deleted object is reported NotFound",
			objs:    []runtime.Object{cm},
			reactor: func() (runtime.Object, error) { return nil, apierrors.NewNotFound(v1.Resource("configmaps"), "cfg") },
			wantErr: apierrors.IsNotFound,
		},
		{
			name:    "failure with nothing cached is returned wrapped",
			reactor: func() (runtime.Object, error) { return nil, boom },
			wantErr: func(err error) bool { return errors.Is(err, boom) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, cs, clk := newTestSource(tc.objs...)
			if len(tc.objs) > 0 {
				if _, err := s.ConfigMap(ctx, "ns", "cfg"); err != nil {
					t.Fatal(err)
				}
				clk.Step(2 * time.Minute)
			}
			cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				obj, err := tc.reactor()
				return true, obj, err
			})
			got, err := getConfigMap(ctx, s, "ns", "cfg")
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err = %v, want a matching error", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestIdleEntriesAreDropped(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newTestSource(
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "busy"}},
	)
	for _, name := range []string{"old", "busy"} {
		if _, err := s.Secret(ctx, "ns", name); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		clk.Step(time.Minute)
		if _, err := s.Secret(ctx, "ns", "busy"); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := s.cache.entries[cacheKey{"secret", "ns", "old"}]; ok {
		t.Error("entry unused for 10 minutes is still cached")
	}
	if _, ok := s.cache.entries[cacheKey{"secret", "ns", "busy"}]; !ok {
		t.Error("entry in use was dropped")
	}
}

func TestConcurrentReadsShareOneFetch(t *testing.T) {
	s, cs, _ := newTestSource(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}})
	release := make(chan struct{})
	cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil // fall through to the object tracker
	})
	const readers = 8
	errs := make(chan error, readers)
	for range readers {
		go func() {
			_, err := s.Secret(context.Background(), "ns", "s")
			errs <- err
		}()
	}
	close(release)
	for range readers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := calls(cs, "get", "secrets"); n != 1 {
		t.Fatalf("%d GETs for %d concurrent readers, want 1", n, readers)
	}
}
