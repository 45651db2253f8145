package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func mk(uid, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"}}
}

func TestEditedStaticPodKeepsName(t *testing.T) {
	m := NewManager()
	old, replacement := mk("a", "web-node"), mk("b", "web-node")
	m.AddOrUpdate(old)
	m.AddOrUpdate(replacement)
	m.Remove(old)
	got, ok := m.GetByFullName("default", "web-node")
	if !ok || got.UID != "b" {
		t.Fatalf("GetByFullName after removing the old pod = %v, %v; want the replacement", got, ok)
	}
	if _, ok := m.Get("a"); ok {
		t.Fatal("removed pod still found by UID")
	}
	if n := len(m.List()); n != 1 {
		t.Fatalf("List has %d pods, want 1", n)
	}
}

func TestMirrorPods(t *testing.T) {
	m := NewManager()
	static := mk("s1", "etcd-node")
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file", podutil.ConfigHashAnnotationKey: "s1"}
	mirror := mk("m1", "etcd-node")
	mirror.Annotations = map[string]string{podutil.ConfigMirrorAnnotationKey: "s1"}
	m.AddOrUpdate(static)
	m.AddOrUpdate(mirror)
	if got, ok := m.Mirror(static); !ok || got.UID != "m1" {
		t.Fatalf("Mirror = %v, %v", got, ok)
	}
	if len(m.List()) != 1 {
		t.Fatal("a mirror pod must not be listed as a pod to run")
	}
	if o := m.OrphanedMirrors(); len(o) != 0 {
		t.Fatalf("mirror with matching hash reported orphaned: %v", o)
	}
	stale := mk("m2", "etcd-node")
	stale.Annotations = map[string]string{podutil.ConfigMirrorAnnotationKey: "old-hash"}
	m.AddOrUpdate(stale)
	if o := m.OrphanedMirrors(); len(o) != 1 || o[0].UID != "m2" {
		t.Fatalf("mirror with a stale hash not reported: %v", o)
	}
	m.Remove(static)
	m.Remove(stale)
	if _, ok := m.Mirror(static); ok {
		t.Fatal("removed mirror still found")
	}
}
