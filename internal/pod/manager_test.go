package pod

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

func TestIsStatic(t *testing.T) {
	p := mk("a", "x")
	if IsStatic(p) {
		t.Fatal("pod without source annotation is static")
	}
	p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	if !IsStatic(p) {
		t.Fatal("file pod not static")
	}
	p.Annotations["kubernetes.io/config.source"] = "api"
	if IsStatic(p) {
		t.Fatal("api pod static")
	}
}
