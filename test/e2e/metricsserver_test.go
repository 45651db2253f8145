//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

const (
	// metricsAPIService is the one APIService name metrics.k8s.io v1beta1
	// can have: one metrics-server per cluster, so the test runs under the
	// e2e lock like every e2e test.
	metricsAPIService = "v1beta1.metrics.k8s.io"
	// metricsServerName names the test's service account, Service and RBAC
	// objects; its label marks what a killed run may have left behind.
	metricsServerName  = "seed-e2e-metrics-server"
	metricsServerLabel = "e2e.seed-kubelet.io/metrics-server"
)

// `kubectl top node` and `kubectl top pod` through a real metrics-server
// (sigs.k8s.io/metrics-server v0.8.0, a process on this machine) scraping
// our kubelet's /metrics/resource over its serving certificate (verified
// against the cluster CA) with a service account token (our kubelet's
// webhook authentication and authorization), and served through the
// apiserver's aggregation layer (an APIService in front of an ExternalName
// Service "localhost": see test/tools/README.md).
func TestKubectlTopThroughMetricsServer(t *testing.T) {
	cp := framework.ControlPlane(t)
	bin := filepath.Join(framework.BinDir(), "metrics-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: build it with `bash hack/build-cluster-tools.sh metrics-server`", bin)
	}
	ctx := ctxT(t)
	// A run killed before its cleanup may have left an unavailable
	// APIService, which breaks discovery for everyone: remove it first.
	removeMetricsServer(t)

	n := joinNode(t)
	n.Start()
	eventually(t, 30*time.Second, "node Ready", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(nd), err
	})
	ns := namespace(t, n.client)
	busy := podOn(n.NodeName, "busy", "sh", "-c", "while :; do :; done")
	busy.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, busy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "busy", "running", podRunning)

	dir := t.TempDir()
	port := ifw.FreePort(t)
	caPEM := metricsServerCert(t, dir)
	kubeconfig := metricsServerIdentity(t, cp, dir)
	// Cleanups run last first: the APIService goes before the process.
	exited := startMetricsServer(t, bin, dir, kubeconfig, port, n.NodeName)
	t.Cleanup(func() { removeMetricsServer(t) })
	framework.Kubectl(t, "apply", "-f", writeFile(t, dir, "apiservice.yaml", metricsAPIObjects(port, caPEM)))

	ifw.Eventually(t, 90*time.Second, 2*time.Second, "APIService "+metricsAPIService+" Available", func() (bool, error) {
		if err := exited(); err != nil {
			t.Fatal(err)
		}
		out, err := framework.TryKubectl(t, "get", "apiservice", metricsAPIService,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		if err != nil {
			return false, err
		}
		return strings.HasPrefix(out, "True"), fmt.Errorf("%s", out)
	})

	// metrics-server has a CPU figure after its second scrape of the node.
	var nodeLine string
	ifw.Eventually(t, 2*time.Minute, 2*time.Second, "kubectl top node "+n.NodeName, func() (bool, error) {
		if err := exited(); err != nil {
			t.Fatal(err)
		}
		out, err := framework.TryKubectl(t, "top", "node", n.NodeName, "--no-headers")
		if err != nil {
			return false, err
		}
		nodeLine = strings.TrimSpace(out)
		f := strings.Fields(nodeLine)
		if len(f) < 5 || f[0] != n.NodeName {
			return false, fmt.Errorf("output %q", out)
		}
		return nonZero(f[1]) && nonZero(f[3]), fmt.Errorf("output %q: want non-zero CPU and memory", out)
	})
	t.Logf("kubectl top node: %s", nodeLine)

	var podLine string
	ifw.Eventually(t, 2*time.Minute, 2*time.Second, "kubectl top pod -n "+ns, func() (bool, error) {
		if err := exited(); err != nil {
			t.Fatal(err)
		}
		out, err := framework.TryKubectl(t, "top", "pod", "-n", ns, "--no-headers")
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "busy" {
				podLine = line
				return nonZero(f[1]), fmt.Errorf("busy pod at %s CPU", f[1])
			}
		}
		return false, fmt.Errorf("no busy pod in %q", out)
	})
	t.Logf("kubectl top pod: %s", podLine)
	// The busy loop is held to its 200m limit (metrics-server's rate over
	// its window may overshoot a little). No lower bound beyond non-zero:
	// on a saturated 2-core machine the loop gets about half its limit.
	f := strings.Fields(podLine)
	if cpu := resource.MustParse(f[1]); cpu.MilliValue() > 300 {
		t.Errorf("busy pod at %s CPU, want at most about its 200m limit", f[1])
	}
	// kubectl rounds memory to Mi; the API has the container's bytes.
	raw, err := framework.TryKubectl(t, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods/busy")
	if err != nil {
		t.Fatal(err)
	}
	var pm struct {
		Containers []struct {
			Name  string
			Usage map[string]string
		}
	}
	if err := json.Unmarshal([]byte(raw), &pm); err != nil {
		t.Fatalf("PodMetrics %q: %v", raw, err)
	}
	if len(pm.Containers) != 1 || pm.Containers[0].Name != busy.Spec.Containers[0].Name || !nonZero(pm.Containers[0].Usage["memory"]) {
		t.Errorf("PodMetrics of busy: %s, want its one container with non-zero memory", raw)
	}
}

// nonZero reports whether a kubectl top quantity ("123m", "45Mi") is above
// zero.
func nonZero(q string) bool {
	v, err := resource.ParseQuantity(q)
	return err == nil && v.Sign() > 0
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// metricsServerCert writes metrics-server's serving certificate and key
// (dir/tls.crt, dir/tls.key), for its Service's name, signed by a CA of the
// test's own, and returns that CA (the APIService's caBundle).
func metricsServerCert(t *testing.T, dir string) []byte {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "seed-e2e-metrics-server-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: metricsServerName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// The aggregator checks the name of the Service it dials.
		DNSNames:    []string{metricsServerName + ".kube-system.svc", "localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	writeFile(t, dir, "tls.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, dir, "tls.key", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// metricsServerIdentity gives metrics-server what its upstream manifests
// give it (a service account in kube-system with the system:metrics-server
// rules, auth-delegator, and the extension-apiserver-authentication
// reader) and writes a kubeconfig with a token of that service account:
// it talks to the apiserver and to our kubelet with it.
func metricsServerIdentity(t *testing.T, cp *framework.Cluster, dir string) string {
	t.Helper()
	framework.Kubectl(t, "apply", "-f", writeFile(t, dir, "rbac.yaml", fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[1]s
  namespace: kube-system
  labels: {%[2]s: "true"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %[1]s
  labels: {%[2]s: "true"}
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[1]s
  labels: {%[2]s: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects: [{kind: ServiceAccount, name: %[1]s, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[1]s:auth-delegator
  labels: {%[2]s: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{kind: ServiceAccount, name: %[1]s, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: %[1]s:auth-reader
  namespace: kube-system
  labels: {%[2]s: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: %[1]s, namespace: kube-system}]
`, metricsServerName, metricsServerLabel)))
	expiry := int64(3600)
	tok, err := cp.Client.CoreV1().ServiceAccounts("kube-system").CreateToken(context.Background(), metricsServerName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", metricsServerName, err)
	}
	return writeFile(t, dir, "kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: seed
  cluster: {server: %s, certificate-authority: %s}
users:
- name: metrics-server
  user: {token: %s}
contexts:
- name: metrics-server
  context: {cluster: seed, user: metrics-server}
current-context: metrics-server
`, framework.APIServerURL, framework.CACert, tok.Status.Token))
}

// startMetricsServer runs metrics-server on 127.0.0.1:port, scraping only
// nodeName (other tests' nodes come and go), through the node's InternalIP
// and the port in its status, checking the kubelet's serving certificate
// against the cluster CA. It is killed when the test ends, or with the test
// binary.
//
// exited reports an error once the process has ended, so that waits on it
// fail at once with its log rather than at their timeout.
func startMetricsServer(t *testing.T, bin, dir, kubeconfig string, port int, nodeName string) (exited func() error) {
	t.Helper()
	logPath := filepath.Join(dir, "metrics-server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1",
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key"),
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--kubelet-preferred-address-types", "InternalIP", "--kubelet-use-node-status-port",
		"--kubelet-certificate-authority", framework.CACert,
		"--node-selector", "kubernetes.io/hostname="+nodeName,
		// Its shortest resolution: it must exceed --kubelet-request-timeout (10s).
		"--metric-resolution", "15s", "--v", "2")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start metrics-server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		logf.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				t.Logf("metrics-server log (last 40 lines):\n%s", ifw.Tail(string(data), 40))
			}
		}
	})
	var exitErr error
	return func() error {
		if exitErr != nil {
			return exitErr
		}
		select {
		case err := <-done:
			exitErr = fmt.Errorf("metrics-server exited: %v", err)
			done <- err // for the cleanup
			return exitErr
		default:
			return nil
		}
	}
}

// metricsAPIObjects is the APIService of metrics.k8s.io v1beta1 and the
// Service in front of metrics-server. The apiserver has no aggregator
// routing: it dials the Service, and an ExternalName Service makes it dial
// that name, https://localhost:PORT (an EndpointSlice, what it would dial
// with --enable-aggregator-routing, may not hold a loopback address).
func metricsAPIObjects(port int, caPEM []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: kube-system
  labels: {%[2]s: "true"}
spec:
  type: ExternalName
  externalName: localhost
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: %[3]s
  labels: {%[2]s: "true"}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {name: %[1]s, namespace: kube-system, port: %[4]d}
  caBundle: %[5]s
`, metricsServerName, metricsServerLabel, metricsAPIService, port, base64.StdEncoding.EncodeToString(caPEM))
}

// removeMetricsServer deletes the APIService (only the one this test
// makes: labelled) and the objects in front of and behind it.
func removeMetricsServer(t *testing.T) {
	t.Helper()
	for _, args := range [][]string{
		{"delete", "apiservice", "-l", metricsServerLabel, "--ignore-not-found", "--wait=false"},
		{"delete", "service,serviceaccount,rolebinding", "-n", "kube-system", "-l", metricsServerLabel, "--ignore-not-found", "--wait=false"},
		{"delete", "clusterrole,clusterrolebinding", "-l", metricsServerLabel, "--ignore-not-found", "--wait=false"},
	} {
		if _, err := framework.TryKubectl(t, args...); err != nil {
			t.Errorf("cleanup: kubectl %s: %v", strings.Join(args, " "), err)
		}
	}
}
