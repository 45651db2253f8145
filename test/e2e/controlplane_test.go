//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// TestAPIServerReachesKubelet checks the apiserver-to-kubelet path that pod
// logs, exec, attach and port-forward take: the apiserver dials the node's
// InternalIP (127.0.0.1) at its kubelet port, verifies the serving
// certificate of hack/make-node-credentials.sh against the cluster CA, and
// presents its kubelet client certificate. A TLS server with the node's
// serving certificate stands in for the kubelet. (The nodes/proxy
// subresource is another matter: the apiserver refuses to proxy to loopback
// addresses.)
func TestAPIServerReachesKubelet(t *testing.T) {
	const name, podName = "e2e-kubelet-endpoint", "e2e-kubelet-endpoint-logs"
	cp := framework.ControlPlane(t)
	creds := framework.NodeCredentials(t, name)
	nodeClient := creds.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	caPEM, err := os.ReadFile(creds.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(creds.ServingCert, creds.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	type call struct{ who, path string }
	calls := make(chan call, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.TLS.PeerCertificates[0].Subject
		select {
		case calls <- call{c.CommonName + "/" + strings.Join(c.Organization, ","), r.URL.Path}:
		default:
		}
		w.Write([]byte("hello from the stand-in kubelet\n"))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	cleanup := func() {
		zero := int64(0)
		err := cp.Client.CoreV1().Pods("default").Delete(context.Background(), podName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", podName, err)
		}
		err = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
	}
	cleanup()
	t.Cleanup(cleanup)

	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	// A patch, as the node lifecycle controller may have tainted the node
	// since (an update could conflict).
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"Hostname","address":%q}],`+
		`"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, name, port)
	if _, err := nodeClient.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patch node status: %v", err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName},
		Spec: v1.PodSpec{
			NodeName:   name,
			Containers: []v1.Container{{Name: "c", Image: "docker.io/library/busybox:1.36"}},
		},
	}
	if _, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	body, err := cp.Client.CoreV1().Pods("default").GetLogs(podName, &v1.PodLogOptions{Container: "c"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod logs through the apiserver: %v (%s)", err, body)
	}
	if string(body) != "hello from the stand-in kubelet\n" {
		t.Errorf("pod logs: %q", body)
	}
	select {
	case c := <-calls:
		if c.who != "kube-apiserver-kubelet-client/system:masters" {
			t.Errorf("the apiserver presented %s, want kube-apiserver-kubelet-client/system:masters", c.who)
		}
		if want := "/containerLogs/default/" + podName + "/c"; c.path != want {
			t.Errorf("the apiserver asked for %s, want %s", c.path, want)
		}
	default:
		t.Errorf("the stand-in kubelet saw no request")
	}
}
