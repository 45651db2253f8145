//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// TestControlPlane checks the control plane the other e2e tests run against:
// the admin client works, the apiserver is the version we built, and the
// controller-manager populated the default namespace.
func TestControlPlane(t *testing.T) {
	cp := framework.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	nss, err := cp.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list namespaces as admin: %v", err)
	}
	have := map[string]bool{}
	for _, ns := range nss.Items {
		have[ns.Name] = true
	}
	for _, want := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if !have[want] {
			t.Errorf("namespace %s missing; have %v", want, have)
		}
	}

	v, err := cp.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if v.GitVersion != framework.KubeVersion {
		t.Errorf("apiserver version %q, want %q", v.GitVersion, framework.KubeVersion)
	}

	if _, err := cp.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("default service account: %v", err)
	}
	if _, err := cp.Client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-root-ca.crt config map: %v", err)
	}

	out := framework.Kubectl(t, "get", "namespace", "kube-system", "-o", "name")
	if strings.TrimSpace(out) != "namespace/kube-system" {
		t.Errorf("kubectl get namespace kube-system: %q", out)
	}
}

// TestNodeIdentity checks that a node's credentials let it register its own
// Node object and no other (Node authorizer and NodeRestriction admission).
func TestNodeIdentity(t *testing.T) {
	const self, other = "e2e-probe", "other-node"
	cp := framework.ControlPlane(t)
	creds := framework.NodeCredentials(t, self)
	nodeClient := creds.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	deleteNodes := func() {
		for _, name := range []string{self, other} {
			err := cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete node %s: %v", name, err)
			}
		}
	}
	deleteNodes() // left over from an interrupted run
	t.Cleanup(deleteNodes)

	node := func(name string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	}
	created, err := nodeClient.CoreV1().Nodes().Create(ctx, node(self), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node %s creating its own Node: %v", self, err)
	}
	if created.Name != self {
		t.Errorf("created node %q, want %q", created.Name, self)
	}
	if _, err := nodeClient.CoreV1().Nodes().Get(ctx, self, metav1.GetOptions{}); err != nil {
		t.Errorf("node %s reading its own Node: %v", self, err)
	}

	_, err = nodeClient.CoreV1().Nodes().Create(ctx, node(other), metav1.CreateOptions{})
	switch {
	case err == nil:
		t.Errorf("node %s created Node %s: NodeRestriction should forbid it", self, other)
	case !apierrors.IsForbidden(err):
		t.Errorf("node %s creating Node %s: got %v, want Forbidden", self, other, err)
	default:
		t.Logf("creating %s as %s: %v", other, self, err)
	}

	// The admin sees the node the kubelet identity registered.
	if out := framework.Kubectl(t, "get", "node", self, "-o", "name"); strings.TrimSpace(out) != "node/"+self {
		t.Errorf("kubectl get node %s: %q", self, out)
	}
}
