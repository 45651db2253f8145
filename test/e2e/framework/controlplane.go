package framework

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// What hack/start-control-plane.sh provides (see hack/lib/cluster.sh).
const (
	// APIServerURL is the apiserver's address, on loopback.
	APIServerURL = "https://127.0.0.1:6443"
	// PKIDir holds the cluster CA and the control plane's certificates.
	PKIDir = "/var/lib/seed-kubelet/pki"
	// CACert is the cluster CA: it signs the apiserver's serving
	// certificate, every client certificate, and the kubelets' serving
	// certificates (the apiserver checks those against it).
	CACert = PKIDir + "/ca.crt"
	// ServiceClusterIPRange is the apiserver's --service-cluster-ip-range.
	ServiceClusterIPRange = "10.0.0.0/24"
	// KubeVersion is the version of the control plane binaries.
	KubeVersion = "v1.36.3"
)

// Binaries the control plane needs in BinDir().
var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// StartTimeout bounds one run of hack/start-control-plane.sh.
var StartTimeout = 5 * time.Minute

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// BinDir is where hack/build-cluster-tools.sh puts its binaries (_output/bin).
func BinDir() string { return filepath.Join(RepoRoot(), "_output", "bin") }

// AdminKubeconfig is the cluster-admin kubeconfig (O=system:masters).
func AdminKubeconfig() string { return filepath.Join(RepoRoot(), "_output", "admin.kubeconfig") }

// UpstreamKubelet is the upstream v1.36.3 kubelet, for comparisons. Fails the
// test when it has not been built.
func UpstreamKubelet(t testing.TB) string {
	t.Helper()
	return binary(t, "kubelet-upstream")
}

// Cluster is the running control plane, seen as cluster-admin.
type Cluster struct {
	// Config is an admin rest.Config (client certificate in system:masters).
	Config *rest.Config
	// Client is an admin clientset built from Config.
	Client *kubernetes.Clientset
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string
	// Instance is which control plane this is (Shared, or a separate one).
	Instance Instance
}

var (
	cpMu      sync.Mutex
	cpCluster *Cluster
)

// ControlPlane makes sure the control plane runs and answers, starting it with
// hack/start-control-plane.sh (idempotent) when it does not, and returns it.
// The script runs once per test binary; later calls only check /readyz and
// rerun it when the apiserver stopped answering. Fails the test when a binary
// is missing (build them with hack/build-cluster-tools.sh) or the control
// plane does not come up.
func ControlPlane(t testing.TB) *Cluster {
	t.Helper()
	cpMu.Lock()
	defer cpMu.Unlock()
	if cpCluster != nil && ready(cpCluster.Config) == nil {
		return cpCluster
	}
	for _, b := range controlPlaneBinaries {
		binary(t, b)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("the control plane needs root (hack/start-control-plane.sh); run the e2e tests as root")
	}
	start := time.Now()
	out, err := runScript(StartTimeout, true, "hack/start-control-plane.sh")
	if err != nil {
		t.Fatalf("hack/start-control-plane.sh: %v\n%s", err, out)
	}
	t.Logf("control plane ready after %v", time.Since(start).Round(time.Millisecond))
	cfg := &rest.Config{
		Host: APIServerURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   CACert,
			CertFile: filepath.Join(PKIDir, "admin.crt"),
			KeyFile:  filepath.Join(PKIDir, "admin.key"),
		},
		UserAgent: "seed-kubelet-e2e",
		QPS:       100,
		Burst:     200,
	}
	if err := ready(cfg); err != nil {
		t.Fatalf("hack/start-control-plane.sh succeeded but the apiserver is not ready: %v\n%s", err, out)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	cpCluster = &Cluster{Config: cfg, Client: client, Kubeconfig: AdminKubeconfig(), Instance: Shared}
	return cpCluster
}

// ready asks the apiserver's /readyz with cfg's credentials.
func ready(cfg *rest.Config) error {
	tlsCfg, err := tlsConfig(cfg.TLSClientConfig)
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(cfg.Host + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s", resp.Status)
	}
	return nil
}

func tlsConfig(c rest.TLSClientConfig) (*tls.Config, error) {
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", c.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}, nil
}

// NodeCreds are a kubelet's credentials for one node name, from
// hack/make-node-credentials.sh.
type NodeCreds struct {
	NodeName string
	// URL is the apiserver the credentials are for.
	URL string
	// Kubeconfig authenticates as system:node:NodeName (group system:nodes)
	// against APIServerURL; the certificates are embedded.
	Kubeconfig string
	// ClientCert and ClientKey are that client certificate.
	ClientCert, ClientKey string
	// ServingCert and ServingKey are for the kubelet's HTTPS port
	// (--tls-cert-file, --tls-private-key-file); SANs NodeName and 127.0.0.1.
	ServingCert, ServingKey string
	// CACert is the cluster CA (the kubelet's --client-ca-file, to
	// authenticate the apiserver's client certificate).
	CACert string
}

// RESTConfig is a rest.Config that authenticates as the node.
func (n NodeCreds) RESTConfig() *rest.Config {
	return &rest.Config{
		Host: n.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   n.CACert,
			CertFile: n.ClientCert,
			KeyFile:  n.ClientKey,
		},
		UserAgent: "seed-kubelet-e2e/" + n.NodeName,
	}
}

// Client is a clientset that authenticates as the node.
func (n NodeCreds) Client(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(n.RESTConfig())
	if err != nil {
		t.Fatalf("client for node %s: %v", n.NodeName, err)
	}
	return c
}

// NodeCredentials issues (or reuses) the credentials of nodeName with
// hack/make-node-credentials.sh. They stay valid for the cluster CA; the
// files live under /var/lib/seed-kubelet/nodes/<nodeName>.
func NodeCredentials(t testing.TB, nodeName string) NodeCreds {
	t.Helper()
	return nodeCredentials(t, Shared, nodeName)
}

func nodeCredentials(t testing.TB, inst Instance, nodeName string) NodeCreds {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("node credentials need root (hack/make-node-credentials.sh); run the e2e tests as root")
	}
	out, err := runScriptEnv(time.Minute, false, inst.env(), "hack/make-node-credentials.sh", nodeName)
	if err != nil {
		t.Fatalf("hack/make-node-credentials.sh %s: %v\n%s", nodeName, err, out)
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	creds := NodeCreds{
		NodeName:    nodeName,
		URL:         inst.URL(),
		Kubeconfig:  kv["KUBECONFIG"],
		ClientCert:  kv["CLIENT_CERT"],
		ClientKey:   kv["CLIENT_KEY"],
		ServingCert: kv["SERVING_CERT"],
		ServingKey:  kv["SERVING_KEY"],
		CACert:      kv["CA_CERT"],
	}
	for _, p := range []string{creds.Kubeconfig, creds.ClientCert, creds.ClientKey, creds.ServingCert, creds.ServingKey, creds.CACert} {
		if p == "" {
			t.Fatalf("hack/make-node-credentials.sh %s: incomplete output:\n%s", nodeName, out)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("hack/make-node-credentials.sh %s: %v", nodeName, err)
		}
	}
	return creds
}

// Kubectl runs _output/bin/kubectl with the admin kubeconfig (starting the
// control plane first if needed) and returns its standard output; the test
// fails when kubectl does.
func Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := TryKubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TryKubectl is Kubectl that returns kubectl's failure (with its standard
// error) instead of failing the test.
func TryKubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	c := ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// binary returns BinDir()/name, failing the test when it is missing.
func binary(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(BinDir(), name)
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("%s is missing: build the cluster tools with `bash hack/build-cluster-tools.sh` (takes several minutes the first time)", p)
	}
	return p
}

// runScript runs a hack/ script from the repository root. It returns the
// script's standard output, and its standard error too when combined is set
// or the script failed.
func runScript(timeout time.Duration, combined bool, script string, args ...string) ([]byte, error) {
	return runScriptEnv(timeout, combined, nil, script, args...)
}

// runScriptEnv is runScript with env added to the environment.
func runScriptEnv(timeout time.Duration, combined bool, env []string, script string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(RepoRoot(), script)}, args...)...)
	cmd.Dir = RepoRoot()
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if combined {
		cmd.Stderr = &stdout
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	if err != nil {
		return append(stdout.Bytes(), stderr.Bytes()...), err
	}
	return stdout.Bytes(), nil
}

// NodeReady reports whether the Node's Ready condition is True.
func NodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
