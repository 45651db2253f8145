package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// Instance names a control plane of hack/start-control-plane.sh: the shared
// one (the zero value, on the ports of APIServerURL) or a separate one
// (SEED_CP=Name) on ports of its own, for tests that stop its apiserver
// while others use the shared one. A separate instance shares the PKI.
type Instance struct {
	Name                                 string
	APIServerPort                        int
	EtcdClientPort, EtcdPeerPort         int
	ControllerManagerPort, SchedulerPort int
}

// Shared is the control plane every e2e test uses.
var Shared = Instance{}

func (i Instance) shared() bool { return i.Name == "" }

// env is the environment that points the hack/ scripts at the instance.
func (i Instance) env() []string {
	if i.shared() {
		return nil
	}
	return []string{
		"SEED_CP=" + i.Name,
		"APISERVER_PORT=" + strconv.Itoa(i.APIServerPort),
		"ETCD_CLIENT_PORT=" + strconv.Itoa(i.EtcdClientPort),
		"ETCD_PEER_PORT=" + strconv.Itoa(i.EtcdPeerPort),
		"CONTROLLER_MANAGER_PORT=" + strconv.Itoa(i.ControllerManagerPort),
		"SCHEDULER_PORT=" + strconv.Itoa(i.SchedulerPort),
	}
}

// URL is the instance's apiserver.
func (i Instance) URL() string {
	if i.shared() {
		return APIServerURL
	}
	return fmt.Sprintf("https://127.0.0.1:%d", i.APIServerPort)
}

// AdminKubeconfig is the instance's cluster-admin kubeconfig.
func (i Instance) AdminKubeconfig() string {
	if i.shared() {
		return AdminKubeconfig()
	}
	return filepath.Join("/var/lib/seed-kubelet", "cp-"+i.Name, "admin.kubeconfig")
}

// pidfile is where the instance's component records its pid.
func (i Instance) pidfile(component string) string {
	prefix := ""
	if !i.shared() {
		prefix = i.Name + "-"
	}
	return filepath.Join("/run/seed-kubelet", prefix+component+".pid")
}

// adminConfig is an admin rest.Config for the instance.
func (i Instance) adminConfig() *rest.Config {
	return &rest.Config{
		Host: i.URL(),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   CACert,
			CertFile: filepath.Join(PKIDir, "admin.crt"),
			KeyFile:  filepath.Join(PKIDir, "admin.key"),
		},
		UserAgent: "seed-kubelet-e2e",
		QPS:       100,
		Burst:     200,
	}
}

// StartControlPlane starts the instance with hack/start-control-plane.sh
// (idempotent) and returns it; a separate instance is stopped and its data
// deleted when the test ends. The shared one is ControlPlane's.
func StartControlPlane(t testing.TB, inst Instance) *Cluster {
	t.Helper()
	if inst.shared() {
		return ControlPlane(t)
	}
	for _, b := range controlPlaneBinaries {
		binary(t, b)
	}
	t.Cleanup(func() {
		if err := StopInstance(inst); err != nil {
			t.Errorf("%v", err)
		}
	})
	start := time.Now()
	c, err := StartInstance(inst)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane %s ready after %v", c.Config.Host, time.Since(start).Round(time.Millisecond))
	return c
}

// StartInstance starts a separate control plane (idempotent) and returns
// it once its apiserver is ready; StopInstance undoes it. For a suite that
// keeps one control plane across its tests (from TestMain).
func StartInstance(inst Instance) (*Cluster, error) {
	if inst.shared() {
		return nil, fmt.Errorf("StartInstance is for a separate control plane; the shared one is ControlPlane's")
	}
	for _, b := range controlPlaneBinaries {
		if st, err := os.Stat(filepath.Join(BinDir(), b)); err != nil || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("%s is missing: build the cluster tools with `bash hack/build-cluster-tools.sh`", filepath.Join(BinDir(), b))
		}
	}
	c := &Cluster{Instance: inst}
	return c, c.start()
}

// StopInstance stops a separate control plane and deletes its data.
func StopInstance(inst Instance) error {
	if out, err := runScriptEnv(2*time.Minute, true, inst.env(), "hack/stop-control-plane.sh", "--clean"); err != nil {
		return fmt.Errorf("stop control plane %s: %v\n%s", inst.Name, err, out)
	}
	return nil
}

// start runs the start script and waits for /readyz.
func (c *Cluster) start() error {
	out, err := runScriptEnv(StartTimeout, true, c.Instance.env(), "hack/start-control-plane.sh")
	if err != nil {
		return fmt.Errorf("hack/start-control-plane.sh (%s): %v\n%s", c.Instance.URL(), err, out)
	}
	cfg := c.Instance.adminConfig()
	if err := ready(cfg); err != nil {
		return fmt.Errorf("hack/start-control-plane.sh succeeded but %s is not ready: %v\n%s", cfg.Host, err, out)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("admin client: %v", err)
	}
	c.Config, c.Client, c.Kubeconfig = cfg, client, c.Instance.AdminKubeconfig()
	return nil
}

// KillAPIServer kills the instance's apiserver with SIGKILL (a SIGTERM would
// wait for its watches to drain for about a minute) and waits until it is
// gone. Only for a separate instance, or the shared one under the e2e lock.
func (c *Cluster) KillAPIServer(t testing.TB) {
	t.Helper()
	pidfile := c.Instance.pidfile("kube-apiserver")
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("read the apiserver's pidfile: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pidfile %s: %v", pidfile, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the apiserver: %v", err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

// Restart starts whatever of the instance is not running (after
// KillAPIServer), waits until all of it is ready, and returns when its
// apiserver first answered /readyz again.
func (c *Cluster) Restart(t testing.TB) time.Time {
	t.Helper()
	stop := make(chan struct{})
	first := make(chan time.Time, 1)
	go func() {
		defer close(first)
		for {
			if ready(c.Instance.adminConfig()) == nil {
				first <- time.Now()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	err := c.start()
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := <-first; ok {
		return at
	}
	return time.Now()
}

// NodeCredentials issues (or reuses) nodeName's credentials for this
// control plane: its kubeconfig points at the instance's apiserver.
func (c *Cluster) NodeCredentials(t testing.TB, nodeName string) NodeCreds {
	t.Helper()
	creds := nodeCredentials(t, c.Instance, nodeName)
	return creds
}

// JoinNode prepares (does not start) our kubelet as node nodeName of c:
// x509 and webhook authentication, webhook authorization, the node's
// serving pair and client kubeconfig, --node-ip 127.0.0.1. The Node is
// deleted when the test ends. extraConfig lines are appended to its
// KubeletConfiguration.
func (c *Cluster) JoinNode(t testing.TB, nodeName string, extraConfig ...string) *ifw.Kubelet {
	t.Helper()
	creds := c.NodeCredentials(t, nodeName)
	clusterAuth := fmt.Sprintf(`authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
tlsCertFile: %s
tlsPrivateKeyFile: %s`, creds.CACert, creds.ServingCert, creds.ServingKey)
	k := ifw.NewKubeletWithAuth(t, clusterAuth, extraConfig...)
	k.NodeName = nodeName
	k.ExtraArgs = append(k.ExtraArgs, "--kubeconfig", creds.Kubeconfig, "--node-ip", "127.0.0.1")
	client := c.Client
	t.Cleanup(func() {
		client.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{})
	})
	return k
}

// Namespace creates namespace ns in c and waits for its default service
// account; it is deleted when the test ends.
func (c *Cluster) Namespace(t testing.TB, ns string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ifw.Eventually(t, 60*time.Second, 100*time.Millisecond, "default service account in "+ns, func() (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	client := c.Client
	t.Cleanup(func() { client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return ns
}
