package localobjects

import (
	"context"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

func entry(obj runtime.Object, path string) Entry {
	key, _ := KeyOf(obj)
	return Entry{Key: key, Object: obj, Path: path}
}

type changes struct{ got [][]Key }

func (c *changes) record(keys []Key) { c.got = append(c.got, keys) }

func (c *changes) take() [][]Key {
	out := c.got
	c.got = nil
	return out
}

func TestStoreSetNotifiesChangesOnly(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := NewStore(StoreConfig{Sources: []string{"file"}, Clock: clk})
	var ch changes
	s.Subscribe(ch.record)
	cfgKey := Key{KindConfigMap, "default", "cfg"}
	credsKey := Key{KindSecret, "default", "creds"}

	s.Set("file", []Entry{entry(cm("cfg", map[string]string{"a": "1"}), "/m/a.yaml"), entry(secret("creds", v1.SecretTypeOpaque, nil), "/m/a.yaml")})
	if got := ch.take(); !reflect.DeepEqual(got, [][]Key{{cfgKey, credsKey}}) {
		t.Fatalf("first set: changes %v", got)
	}
	first, _ := s.Get(cfgKey)
	meta := first.Object.(*v1.ConfigMap).ObjectMeta
	if meta.UID == "" || !meta.CreationTimestamp.Time.Equal(clk.Now()) {
		t.Fatalf("identity not given: uid %q created %v", meta.UID, meta.CreationTimestamp)
	}

	// A relist with the same content, one object now in another file.
	clk.Step(time.Minute)
	s.Set("file", []Entry{entry(cm("cfg", map[string]string{"a": "1"}), "/m/b.yaml"), entry(secret("creds", v1.SecretTypeOpaque, nil), "/m/a.yaml")})
	if got := ch.take(); got != nil {
		t.Fatalf("unchanged relist notified %v", got)
	}
	if e, _ := s.Get(cfgKey); e.Path != "/m/b.yaml" {
		t.Errorf("path = %q, want the new file", e.Path)
	}

	// An edit keeps the identity.
	s.Set("file", []Entry{entry(cm("cfg", map[string]string{"a": "2"}), "/m/b.yaml"), entry(secret("creds", v1.SecretTypeOpaque, nil), "/m/a.yaml")})
	if got := ch.take(); !reflect.DeepEqual(got, [][]Key{{cfgKey}}) {
		t.Fatalf("edit: changes %v", got)
	}
	edited, _ := s.Get(cfgKey)
	em := edited.Object.(*v1.ConfigMap)
	if em.UID != meta.UID || !em.CreationTimestamp.Equal(&meta.CreationTimestamp) || em.Data["a"] != "2" {
		t.Errorf("edited object: uid %q created %v data %v; want uid %q created %v", em.UID, em.CreationTimestamp, em.Data, meta.UID, meta.CreationTimestamp)
	}

	// Removal.
	s.Set("file", []Entry{entry(cm("cfg", map[string]string{"a": "2"}), "/m/b.yaml")})
	if got := ch.take(); !reflect.DeepEqual(got, [][]Key{{credsKey}}) {
		t.Fatalf("removal: changes %v", got)
	}
	if _, err := s.Secret(context.Background(), "default", "creds"); !apierrors.IsNotFound(err) || err.Error() != `secret "creds" not found` {
		t.Fatalf("removed secret: err %v, want upstream's NotFound", err)
	}
	if _, err := s.ConfigMap(context.Background(), "other", "cfg"); !apierrors.IsNotFound(err) || err.Error() != `configmap "cfg" not found` {
		t.Fatalf("config map of another namespace: err %v", err)
	}
}

func TestStorePrecedenceAndList(t *testing.T) {
	s := NewStore(StoreConfig{Sources: []string{"file", "objects"}})
	s.Set("objects", []Entry{entry(cm("shared", map[string]string{"from": "objects"}), "/o/x.yaml"), entry(cm("only-objects", nil), "/o/y.yaml")})
	s.Set("file", []Entry{entry(cm("shared", map[string]string{"from": "file"}), "/m/x.yaml")})
	got, err := s.ConfigMap(context.Background(), "default", "shared")
	if err != nil || got.Data["from"] != "file" {
		t.Fatalf("shared = %v, %v; want the staticPodPath definition", got, err)
	}
	var names []string
	for _, e := range s.List(KindConfigMap, "") {
		names = append(names, e.Key.Name)
	}
	if !reflect.DeepEqual(names, []string{"only-objects", "shared"}) {
		t.Errorf("list = %v", names)
	}
	if l := s.List(KindSecret, "default"); len(l) != 0 {
		t.Errorf("secrets = %v, want none", l)
	}
	other := cm("elsewhere", nil)
	other.Namespace = "team"
	s.Set("objects", []Entry{entry(other, "/o/z.yaml")})
	if l := s.List(KindConfigMap, "team"); len(l) != 1 || l[0].Key.Name != "elsewhere" {
		t.Errorf("list team = %v", l)
	}
}

func TestReferences(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: v1.PodSpec{
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
			Volumes:          []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}},
		},
	}
	tests := []struct {
		name string
		keys []Key
		want bool
	}{
		{"its config map", []Key{{KindConfigMap, "default", "cfg"}}, true},
		{"its pull secret", []Key{{KindConfigMap, "default", "x"}, {KindSecret, "default", "pull"}}, true},
		{"a secret named like its config map", []Key{{KindSecret, "default", "cfg"}}, false},
		{"its config map's name in another namespace", []Key{{KindConfigMap, "other", "cfg"}}, false},
		{"nothing", nil, false},
	}
	for _, tc := range tests {
		if got := References(pod, tc.keys); got != tc.want {
			t.Errorf("%s: References = %v, want %v", tc.name, got, tc.want)
		}
	}
}
