//go:build e2e

package kubeadm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// TestKubeadmInitAndJoin: `kubeadm init` brings up a control plane run by
// our kubelet as static pods (the node turns Ready, kube-system shows the
// mirror pods Running), then a second kubelet of ours joins with a
// bootstrap token: its client CSR is approved by kubeadm's RBAC, it
// registers, and a pod the scheduler puts on it runs, with `kubectl logs`
// and `kubectl exec` working. Neither kubelet warns about anything kubeadm
// configured.
func TestKubeadmInitAndJoin(t *testing.T) {
	start := time.Now()
	c := newCluster(t, "kubeadm-cp")
	cp := c.initControlPlane()
	ctx := context.Background()

	// The control-plane node.
	waitNodeReady(t, c.admin, c.cpName, 2*time.Minute)
	ifw.Eventually(t, 2*time.Minute, 200*time.Millisecond, "kube-system mirror pods Running and Ready", func() (bool, error) {
		out, err := c.kubectl("get", "pods", "-n", "kube-system", "-o", "json")
		if err != nil {
			return false, err
		}
		var list v1.PodList
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, err
		}
		for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			if err := runningMirror(list.Items, comp+"-"+c.cpName); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if out, err := c.kubectl("get", "pods", "-n", "kube-system", "-o", "wide"); err == nil {
		t.Logf("kubectl get pods -n kube-system:\n%s", out)
	}
	// kubeadm's kubelet-finalize found the rotated pair and pointed
	// kubelet.conf at it; the kubelet replaced kubeadm's embedded pair
	// through a CSR that the controller-manager approved.
	if !strings.Contains(c.initOutput(t), "Assuming that kubelet client certificate rotation is enabled") {
		t.Error("kubeadm did not find kubelet-client-current.pem after init")
	}
	assertKubeconfigUses(t, filepath.Join(etcKubernetes, "kubelet.conf"), filepath.Join(varLibKubelet, "pki", "kubelet-client-current.pem"))
	waitCSRIssued(t, c, "system:node:"+c.cpName)

	// A node joins through TLS bootstrap, on a runtime of its own.
	worker := "kubeadm-worker"
	runtime := privateContainerd(t, "kubeadm-join")
	w := c.join(worker, runtime, "")
	if !strings.Contains(w.output, "This node has joined the cluster") {
		t.Fatalf("kubeadm join did not finish:\n%s", ifw.Tail(w.output, 30))
	}
	waitNodeReady(t, c.admin, worker, time.Minute)
	csr := waitCSRIssued(t, c, "system:bootstrap:")
	if !approvedBy(csr, "AutoApproved") {
		t.Errorf("the worker's CSR %s was not auto-approved by kubeadm's RBAC: %v", csr.Name, csr.Status.Conditions)
	}
	assertKubeconfigUses(t, filepath.Join(w.etcKubernetes(), "kubelet.conf"), filepath.Join(w.varLibKubelet(), "pki", "kubelet-client-current.pem"))
	if _, err := os.Stat(filepath.Join(w.etcKubernetes(), "bootstrap-kubelet.conf")); !os.IsNotExist(err) {
		t.Errorf("kubeadm left the bootstrap credentials (%v)", err)
	}

	// A pod the scheduler places on the worker (the control plane is
	// tainted) runs; logs and exec go through the API server to it.
	pod := sleeperPod("hello", "sh", "-c", "echo hello from the joined node; sleep 3600")
	ifw.Eventually(t, time.Minute, 200*time.Millisecond, "default service account", func() (bool, error) {
		_, err := c.admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	if _, err := c.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePod(t, c, "default", "hello") })
	ifw.Eventually(t, 90*time.Second, 200*time.Millisecond, "pod hello Running on the worker", func() (bool, error) {
		p, err := c.admin.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.NodeName == worker && p.Status.Phase == v1.PodRunning, nil
	})
	ifw.Eventually(t, 30*time.Second, 200*time.Millisecond, "kubectl logs", func() (bool, error) {
		out, err := c.kubectl("logs", "hello")
		return strings.Contains(out, "hello from the joined node"), err
	})
	out, err := c.kubectl("exec", "hello", "--", "sh", "-c", "echo exec $((6*7)) on $(hostname)")
	if err != nil || strings.TrimSpace(out) != "exec 42 on hello" {
		t.Fatalf("kubectl exec: %q, %v", out, err)
	}

	// Everything kubeadm configured is honoured: no "not supported"
	// warning, neither when its files are parsed nor in either log.
	for _, n := range []struct {
		name string
		args []string
		k    *unitKubelet
	}{{c.cpName, cp.args, cp.kubelet}, {worker, w.args, w.kubelet}} {
		if warnings := parseWarnings(t, n.args); len(warnings) != 0 {
			t.Errorf("%s: kubeadm's flags and configuration draw warnings: %q", n.name, warnings)
		}
		if warnings := n.k.warnings(t); len(warnings) != 0 {
			t.Errorf("%s: kubelet logged: %q", n.name, warnings)
		}
	}
	t.Logf("kubeadm init and join proven in %v", time.Since(start).Round(time.Second))
}

// runningMirror checks that the mirror pod name is Running and Ready.
func runningMirror(pods []v1.Pod, name string) error {
	for _, p := range pods {
		if p.Name != name {
			continue
		}
		if _, ok := p.Annotations["kubernetes.io/config.mirror"]; !ok {
			return fmt.Errorf("%s is not a mirror pod", name)
		}
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("%s is %s", name, p.Status.Phase)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("%s is not Ready: %v", name, p.Status.Conditions)
	}
	return fmt.Errorf("no pod %s", name)
}

func (c *cluster) initOutput(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(c.dir, "kubeadm-init.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// assertKubeconfigUses checks that a kubeconfig authenticates with the
// pair file pem.
func assertKubeconfigUses(t *testing.T, kubeconfig, pem string) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	if auth.ClientCertificate != pem || auth.ClientKey != pem {
		t.Errorf("%s authenticates with %q/%q, want %s", kubeconfig, auth.ClientCertificate, auth.ClientKey, pem)
	}
	if _, err := os.Stat(pem); err != nil {
		t.Errorf("%s: %v", pem, err)
	}
}

// waitCSRIssued waits for a kube-apiserver-client-kubelet CSR whose
// requestor starts with user to be approved and issued.
func waitCSRIssued(t *testing.T, c *cluster, user string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var found *certificatesv1.CertificateSigningRequest
	ifw.Eventually(t, time.Minute, 200*time.Millisecond, "an issued CSR of "+user, func() (bool, error) {
		list, err := c.admin.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			csr := &list.Items[i]
			if strings.HasPrefix(csr.Spec.Username, user) && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
				len(csr.Status.Certificate) > 0 {
				found = csr
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func approvedBy(csr *certificatesv1.CertificateSigningRequest, reason string) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Reason == reason {
			return true
		}
	}
	return false
}

func deletePod(t *testing.T, c *cluster, ns, name string) {
	ctx := context.Background()
	c.admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := c.admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("pod %s/%s still there after a minute", ns, name)
}

// privateContainerd starts a containerd of the test's own (hack/
// private-containerd.sh) and stops it, with every container it ran, when
// the test ends.
func privateContainerd(t *testing.T, name string) string {
	t.Helper()
	script := filepath.Join(framework.RepoRoot(), "hack", "private-containerd.sh")
	out, err := runQuiet(2*time.Minute, "bash", script, name)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, name, err, out)
	}
	endpoint := lines(out)[len(lines(out))-1]
	t.Cleanup(func() {
		// Stopping containerd leaves its containers running: remove them.
		removeAllPods(t, endpoint)
		if out, err := runQuiet(2*time.Minute, "bash", script, name, "stop"); err != nil {
			t.Errorf("%s %s stop: %v\n%s", script, name, err, out)
		}
	})
	return endpoint
}

// removeAllPods stops and removes every pod sandbox of a runtime.
func removeAllPods(t *testing.T, endpoint string) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Errorf("connect to %s: %v", endpoint, err)
		return
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Errorf("list sandboxes of %s: %v", endpoint, err)
		return
	}
	for _, sb := range sbs.Items {
		if err := ifw.StopAndRemovePodSandbox(rs, sb.Id); err != nil {
			t.Errorf("remove sandbox %s: %v", sb.Id, err)
		}
	}
}
