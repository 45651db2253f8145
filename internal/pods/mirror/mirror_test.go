package mirror

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func static() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-node1", Namespace: "kube-system", UID: "abc",
			Annotations: map[string]string{podutil.ConfigHashAnnotationKey: "abc", podutil.ConfigSourceAnnotationKey: "file"}},
		Spec:   v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func TestBuild(t *testing.T) {
	mp := Build(static(), "node1", "node-uid")
	if mp.UID != "" || mp.Status.Phase != "" {
		t.Fatalf("mirror pod keeps UID %q or status %q", mp.UID, mp.Status.Phase)
	}
	if mp.Annotations[podutil.ConfigMirrorAnnotationKey] != "abc" {
		t.Fatalf("mirror annotation = %q, want the static pod's hash", mp.Annotations[podutil.ConfigMirrorAnnotationKey])
	}
	if len(mp.OwnerReferences) != 1 || mp.OwnerReferences[0].Kind != "Node" || mp.OwnerReferences[0].UID != "node-uid" {
		t.Fatalf("owner references %v", mp.OwnerReferences)
	}
}

func TestCreateAndDelete(t *testing.T) {
	cs := fake.NewClientset()
	c := New(Config{Client: kubeclienttest.Wrap(cs), NodeName: "node1", NodeUID: func() types.UID { return "node-uid" }})
	ctx := context.Background()
	if err := c.Create(ctx, static()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, static()); err != nil {
		t.Fatalf("second create: %v", err)
	}
	if err := c.Delete(ctx, "kube-system", "etcd-node1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("kube-system").Get(ctx, "etcd-node1", metav1.GetOptions{}); err == nil {
		t.Fatal("mirror pod still there")
	}
	if err := New(Config{Client: kubeclienttest.Wrap(cs), NodeName: "node1", NodeUID: func() types.UID { return "" }}).Create(ctx, static()); err == nil {
		t.Fatal("create without a node UID must fail")
	}
}
