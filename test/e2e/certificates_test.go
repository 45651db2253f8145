//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// bootstrapToken is a bootstrap token in kube-system and the RBAC that
// lets its holder ask for a node client certificate (and, with
// autoApprove, have it approved by the controller-manager), as kubeadm
// sets them up. Everything is removed when the test ends.
type bootstrapToken struct {
	id, secret string
	group      string
}

func (b bootstrapToken) String() string { return b.id + "." + b.secret }

func newBootstrapToken(t testing.TB, c kubernetes.Interface, autoApprove bool) bootstrapToken {
	t.Helper()
	ctx := context.Background()
	b := bootstrapToken{id: rand.String(6), secret: rand.String(16)}
	b.group = "system:bootstrappers:seed-e2e-" + b.id
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + b.id, Namespace: "kube-system"},
		Type:       v1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id": b.id, "token-secret": b.secret, "usage-bootstrap-authentication": "true",
			"auth-extra-groups": b.group, "expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}
	if _, err := c.CoreV1().Secrets("kube-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CoreV1().Secrets("kube-system").Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
	roles := []string{"system:node-bootstrapper"}
	if autoApprove {
		roles = append(roles, "system:certificates.k8s.io:certificatesigningrequests:nodeclient")
	}
	for _, role := range roles {
		name := "seed-e2e-" + b.id + "-" + strings.ReplaceAll(role, ":", "-")
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: b.group}},
		}
		if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	return b
}

// writeBootstrapKubeconfig writes a kubeconfig for the test cluster that
// authenticates with token (atomically: the kubelet may be reading it).
func writeBootstrapKubeconfig(t testing.TB, path, token string) {
	t.Helper()
	ca, err := os.ReadFile(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: framework.APIServerURL, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"tls-bootstrap-token-user": {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{"tls-bootstrap": {Cluster: "c", AuthInfo: "tls-bootstrap-token-user"}},
		CurrentContext: "tls-bootstrap",
	}
	if err := clientcmd.WriteToFile(kc, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// bootstrapNode is a kubelet that joins the test cluster with
// --bootstrap-kubeconfig only.
type bootstrapNode struct {
	*ifw.Kubelet
	kubeconfig, bootstrapKubeconfig, certDir string
}

func newBootstrapNode(t *testing.T, token string, extraConfig ...string) *bootstrapNode {
	t.Helper()
	cp := framework.ControlPlane(t)
	k := ifw.NewKubeletWithAuth(t, webhookAuth(framework.CACert), append([]string{"rotateCertificates: true"}, extraConfig...)...)
	dir := filepath.Dir(k.ConfigPath)
	n := &bootstrapNode{Kubelet: k, kubeconfig: filepath.Join(dir, "kubelet.conf"),
		bootstrapKubeconfig: filepath.Join(dir, "bootstrap-kubelet.conf"), certDir: filepath.Join(k.RootDir, "pki")}
	writeBootstrapKubeconfig(t, n.bootstrapKubeconfig, token)
	k.ExtraArgs = append(k.ExtraArgs, "--kubeconfig", n.kubeconfig, "--bootstrap-kubeconfig", n.bootstrapKubeconfig, "--node-ip", "127.0.0.1")
	t.Cleanup(func() {
		ctx := context.Background()
		cp.Client.CoreV1().Nodes().Delete(ctx, k.NodeName, metav1.DeleteOptions{})
		csrs, _ := cp.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		for _, csr := range csrs.Items {
			if strings.Contains(string(csrRequest(csr).Subject.CommonName), k.NodeName) {
				cp.Client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{})
			}
		}
	})
	return n
}

func csrRequest(csr certificatesv1.CertificateSigningRequest) *x509.CertificateRequest {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return &x509.CertificateRequest{}
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return &x509.CertificateRequest{}
	}
	return req
}

// pendingCSR waits for a CSR for commonName with signer that nobody
// decided on yet.
func pendingCSR(t *testing.T, c kubernetes.Interface, signer, commonName string, timeout time.Duration) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var found *certificatesv1.CertificateSigningRequest
	eventually(t, timeout, "a pending "+signer+" CSR for "+commonName, func() (bool, error) {
		list, err := c.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			csr := &list.Items[i]
			if csr.Spec.SignerName == signer && csrRequest(*csr).Subject.CommonName == commonName && len(csr.Status.Conditions) == 0 {
				found = csr
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func decide(t *testing.T, c kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, cond certificatesv1.RequestConditionType, reason string) {
	t.Helper()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: cond, Status: v1.ConditionTrue, Reason: reason, Message: "decided by the e2e test",
	})
	if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func logContains(t *testing.T, k *ifw.Kubelet, parts ...string) bool {
	data, err := os.ReadFile(k.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestTLSBootstrapThroughFaults: a kubelet with only a bootstrap
// kubeconfig whose token the API server rejects says so, naming the
// credentials, and retries; with the kubeconfig fixed on disk (no
// restart) it creates a CSR; a denied CSR is reported with its name and
// reason and a new one is made; once one is approved the Node registers
// at once, and the cert dir holds upstream's files, complete.
func TestTLSBootstrapThroughFaults(t *testing.T) {
	cp := framework.ControlPlane(t)
	token := newBootstrapToken(t, cp.Client, false)
	n := newBootstrapNode(t, token.id+"."+rand.String(16)) // wrong secret
	n.Start()
	eventually(t, 30*time.Second, "the rejected bootstrap credentials in the log", func() (bool, error) {
		return logContains(t, n.Kubelet, "Certificate request failed", "Unauthorized", n.bootstrapKubeconfig), nil
	})
	// Rotation on: the kubeconfig is written at once, pointing at the pair
	// to come, as upstream.
	assertKubeconfigPointsAt(t, n.kubeconfig, filepath.Join(n.certDir, "kubelet-client-current.pem"))
	if _, err := cp.Client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{}); err == nil {
		t.Fatal("node registered without a certificate")
	}

	writeBootstrapKubeconfig(t, n.bootstrapKubeconfig, token.String())
	csr := pendingCSR(t, cp.Client, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:"+n.NodeName, time.Minute)
	if got, want := csr.Spec.Username, "system:bootstrap:"+token.id; got != want {
		t.Errorf("CSR requested by %s, want %s", got, want)
	}
	req := csrRequest(*csr)
	if fmt.Sprint(req.Subject.Organization) != "[system:nodes]" || req.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("CSR subject %v key %v, want O=system:nodes and an ECDSA key", req.Subject, req.PublicKeyAlgorithm)
	}
	if fmt.Sprint(csr.Spec.Usages) != "[digital signature client auth]" {
		t.Errorf("usages %v", csr.Spec.Usages)
	}
	decide(t, cp.Client, csr, certificatesv1.CertificateDenied, "TestDenied")
	eventually(t, 30*time.Second, "the denial in the log, naming the CSR and the reason", func() (bool, error) {
		return logContains(t, n.Kubelet, "Certificate request failed", csr.Name, "denied", "TestDenied"), nil
	})

	next := pendingCSR(t, cp.Client, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:"+n.NodeName, time.Minute)
	if next.Name == csr.Name {
		t.Fatal("the denied CSR was reused")
	}
	decide(t, cp.Client, next, certificatesv1.CertificateApproved, "TestApproved")
	var issued time.Time
	eventually(t, 30*time.Second, "the CSR issued", func() (bool, error) {
		got, err := cp.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), next.Name, metav1.GetOptions{})
		if err == nil && len(got.Status.Certificate) > 0 && issued.IsZero() {
			issued = time.Now()
		}
		return !issued.IsZero(), err
	})
	eventually(t, 10*time.Second, "node Ready", func() (bool, error) {
		nd, err := cp.Client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(nd), err
	})

	// The cert dir: one timestamped pair, the current link to it, no
	// temporary files; the kubeconfig is complete and works.
	entries, err := os.ReadDir(n.certDir)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "kubelet-client-2"):
			pairs = append(pairs, name)
		case name == "kubelet-client-current.pem", name == "kubelet.crt", name == "kubelet.key":
		default:
			t.Errorf("unexpected file %s in the cert dir", name)
		}
	}
	if len(pairs) != 1 {
		t.Fatalf("pairs %v, want one", pairs)
	}
	target, err := os.Readlink(filepath.Join(n.certDir, "kubelet-client-current.pem"))
	if err != nil || target != filepath.Join(n.certDir, pairs[0]) {
		t.Errorf("current link -> %q (%v), want %s", target, err, pairs[0])
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodeClient.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{}); err != nil {
		t.Errorf("the written kubeconfig does not authenticate as the node: %v", err)
	}
}

func assertKubeconfigPointsAt(t *testing.T, kubeconfig, pem string) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	if auth.ClientCertificate != pem || auth.ClientKey != pem || auth.Token != "" {
		t.Errorf("kubeconfig authenticates with %+v, want %s", auth, pem)
	}
}

// BenchmarkTLSBootstrapToNodeRegistered measures how long after its client
// certificate is issued a bootstrapping kubelet has its Node registered
// (the bar: well under a second, no fixed wait): each iteration starts a
// kubelet with a bootstrap token the controller-manager auto-approves,
// and reports the gap between the CSR's issuance and the Node's creation
// as seen by watches.
//
//	go test -tags e2e -run XXX -bench TLSBootstrap -benchtime 5x ./test/e2e/
func BenchmarkTLSBootstrapToNodeRegistered(b *testing.B) {
	cp := framework.ControlPlane(b)
	token := newBootstrapToken(b, cp.Client, true)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += bootstrapOnce(b, cp.Client, token)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-issued-to-registered")
}

func bootstrapOnce(b *testing.B, c kubernetes.Interface, token bootstrapToken) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := ifw.UniqueName("boot")
	csrs, err := c.CertificatesV1().CertificateSigningRequests().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer csrs.Stop()
	nodes, err := c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		b.Fatal(err)
	}
	defer nodes.Stop()
	k := startBootstrapKubelet(b, name, token.String())
	defer k.Stop()
	var issued, registered time.Time
	var csrName string
	for issued.IsZero() || registered.IsZero() {
		select {
		case ev := <-csrs.ResultChan():
			if csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok && issued.IsZero() &&
				csrRequest(*csr).Subject.CommonName == "system:node:"+name && len(csr.Status.Certificate) > 0 {
				issued, csrName = time.Now(), csr.Name
			}
		case ev := <-nodes.ResultChan():
			if registered.IsZero() && ev.Type == "ADDED" {
				registered = time.Now()
			}
		case <-ctx.Done():
			b.Fatalf("node %s: issued %v registered %v", name, issued, registered)
		}
	}
	c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	c.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), csrName, metav1.DeleteOptions{})
	return registered.Sub(issued)
}

// startBootstrapKubelet is newBootstrapNode for a benchmark.
func startBootstrapKubelet(b *testing.B, name, token string) *ifw.Kubelet {
	k := ifw.NewKubeletWithAuth(b, webhookAuth(framework.CACert), "rotateCertificates: true")
	k.NodeName = name
	dir := filepath.Dir(k.ConfigPath)
	writeBootstrapKubeconfig(b, filepath.Join(dir, "bootstrap-kubelet.conf"), token)
	k.ExtraArgs = append(k.ExtraArgs, "--kubeconfig", filepath.Join(dir, "kubelet.conf"),
		"--bootstrap-kubeconfig", filepath.Join(dir, "bootstrap-kubelet.conf"), "--node-ip", "127.0.0.1")
	k.Start()
	return k
}

// TestServingCertificateBootstrap: with serverTLSBootstrap the kubelet asks
// for a kubelet-serving certificate for its addresses; until someone
// approves it, its API has no certificate to serve; once the test approves
// it, the TLS handshake on the kubelet port presents the issued
// certificate, which the API server verifies (kubectl logs works).
func TestServingCertificateBootstrap(t *testing.T) {
	cp := framework.ControlPlane(t)
	creds := framework.NodeCredentials(t, ifw.UniqueName("node"))
	k := ifw.NewKubeletWithAuth(t, webhookAuth(creds.CACert), "serverTLSBootstrap: true")
	k.NodeName = creds.NodeName
	k.ExtraArgs = append(k.ExtraArgs, "--kubeconfig", creds.Kubeconfig, "--node-ip", "127.0.0.1")
	t.Cleanup(func() {
		cp.Client.CoreV1().Nodes().Delete(context.Background(), k.NodeName, metav1.DeleteOptions{})
	})
	k.Start()
	addr := fmt.Sprintf("127.0.0.1:%d", k.Port)
	if _, err := handshake(addr, nil); err == nil {
		t.Fatal("the kubelet API served a certificate before one was issued")
	}
	csr := pendingCSR(t, cp.Client, certificatesv1.KubeletServingSignerName, "system:node:"+k.NodeName, time.Minute)
	req := csrRequest(*csr)
	if csr.Spec.Username != "system:node:"+k.NodeName || fmt.Sprint(req.Subject.Organization) != "[system:nodes]" {
		t.Errorf("CSR by %s subject %v", csr.Spec.Username, req.Subject)
	}
	if fmt.Sprint(req.DNSNames) != "["+k.NodeName+"]" || len(req.IPAddresses) != 1 || !req.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("SANs DNS %v IP %v, want the node's Hostname and InternalIP addresses", req.DNSNames, req.IPAddresses)
	}
	if fmt.Sprint(csr.Spec.Usages) != "[digital signature server auth]" {
		t.Errorf("usages %v", csr.Spec.Usages)
	}
	decide(t, cp.Client, csr, certificatesv1.CertificateApproved, "TestApproved")
	var issued *x509.Certificate
	eventually(t, 30*time.Second, "the serving CSR issued", func() (bool, error) {
		got, err := cp.Client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), csr.Name, metav1.GetOptions{})
		if err != nil || len(got.Status.Certificate) == 0 {
			return false, err
		}
		certs, err := certutil.ParseCertsPEM(got.Status.Certificate)
		issued = certs[0]
		return err == nil, err
	})
	pool := caPool(t)
	eventually(t, 30*time.Second, "the kubelet port to present the issued certificate", func() (bool, error) {
		cert, err := handshake(addr, pool)
		if err != nil {
			return false, err
		}
		return cert.SerialNumber.Cmp(issued.SerialNumber) == 0, fmt.Errorf("serial %v, want %v", cert.SerialNumber, issued.SerialNumber)
	})
	// The API server checks kubelet certificates against the cluster CA:
	// logs of a pod on the node work with the issued one.
	ns := namespace(t, cp.Client)
	if _, err := cp.Client.CoreV1().Pods(ns).Create(context.Background(), podOn(k.NodeName, "talker", "sh", "-c", "echo served; sleep 3600"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cp.Client, ns, "talker", "running", podRunning)
	eventually(t, 30*time.Second, "kubectl logs through the issued certificate", func() (bool, error) {
		out, err := framework.TryKubectl(t, "logs", "-n", ns, "talker")
		return strings.Contains(out, "served"), err
	})
}

// TestServingCertificateFileReplaced: a tlsCertFile/tlsPrivateKeyFile pair
// replaced on disk is served from the next handshake, without a restart.
func TestServingCertificateFileReplaced(t *testing.T) {
	creds := framework.NodeCredentials(t, ifw.UniqueName("node"))
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	copyFile(t, creds.ServingCert, certFile)
	copyFile(t, creds.ServingKey, keyFile)
	k := ifw.NewKubeletWithAuth(t, webhookAuth(creds.CACert)+fmt.Sprintf("\ntlsCertFile: %s\ntlsPrivateKeyFile: %s", certFile, keyFile))
	k.NodeName = creds.NodeName
	k.ExtraArgs = append(k.ExtraArgs, "--kubeconfig", creds.Kubeconfig, "--node-ip", "127.0.0.1")
	cp := framework.ControlPlane(t)
	t.Cleanup(func() { cp.Client.CoreV1().Nodes().Delete(context.Background(), k.NodeName, metav1.DeleteOptions{}) })
	k.Start()
	addr := fmt.Sprintf("127.0.0.1:%d", k.Port)
	pool := caPool(t)
	first, err := handshake(addr, pool)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := issueServingCert(t, k.NodeName)
	// A key first, then its certificate, each renamed into place as
	// cert-manager and the like do.
	writeAtomic(t, keyFile, keyPEM)
	writeAtomic(t, certFile, certPEM)
	want, _ := certutil.ParseCertsPEM(certPEM)
	eventually(t, 30*time.Second, "the replaced certificate served", func() (bool, error) {
		cert, err := handshake(addr, pool)
		if err != nil {
			return false, err
		}
		return cert.SerialNumber.Cmp(want[0].SerialNumber) == 0, fmt.Errorf("serial %v (first %v), want %v", cert.SerialNumber, first.SerialNumber, want[0].SerialNumber)
	})
	if !k.Running() {
		t.Fatal("the kubelet exited: a restart is not how it got there")
	}
}

// handshake connects to the kubelet's TLS port and returns the leaf it
// presents, verified against pool (when given) for IP 127.0.0.1.
func handshake(addr string, pool *x509.CertPool) (*x509.Certificate, error) {
	cfg := &tls.Config{InsecureSkipVerify: pool == nil, RootCAs: pool, ServerName: "127.0.0.1"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func caPool(t *testing.T) *x509.CertPool {
	t.Helper()
	pool, err := certutil.NewPool(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// issueServingCert signs a serving certificate for nodeName and 127.0.0.1
// with the test cluster's CA.
func issueServingCert(t *testing.T, nodeName string) ([]byte, []byte) {
	t.Helper()
	caPEM, err := os.ReadFile(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(framework.PKIDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	cas, err := certutil.ParseCertsPEM(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := keyutil.ParsePrivateKeyPEM(caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	serial, _ := cryptorand.Int(cryptorand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: nodeName},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{nodeName}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, cas[0], key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}
