//go:build e2e

package kubeadm

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// initNode is the control-plane node `kubeadm init` set up.
type initNode struct {
	kubelet *unitKubelet
	// args is its kubelet's command line from kubeadm's unit.
	args []string
}

// initControlPlane runs `kubeadm init` with our kubelet started, as
// kubeadm's unit would start it, once kubeadm has written its files.
func (c *cluster) initControlPlane() *initNode {
	t := c.t
	t.Helper()
	c.takeOverPaths()
	ensureBridge(t)
	c.loadImages(c.runtime)
	cgroupRoot := "/seed-" + c.cpName
	ifw.CreateCgroupRoot(t, cgroupRoot)
	patches := filepath.Join(c.dir, "init-patches")
	os.MkdirAll(patches, 0o755)
	// Per-node settings go in kubeadm patches; kube-controller-manager's
	// and kube-scheduler's probe port is a constant in kubeadm's manifests
	// (10257/10259, which the shared control plane holds): patched to
	// the ports they serve on here.
	writeFile(t, filepath.Join(patches, "kubeletconfiguration.yaml"), fmt.Sprintf("cgroupRoot: %s\npodLogsDir: %s\n", cgroupRoot, filepath.Join(c.dir, "cp-pod-logs")))
	writeFile(t, filepath.Join(patches, "kube-controller-manager+json.yaml"), probePortPatch(c.ports.controllerManager))
	writeFile(t, filepath.Join(patches, "kube-scheduler+json.yaml"), probePortPatch(c.ports.scheduler))

	cmArgs := map[string]string{"secure-port": fmt.Sprint(c.ports.controllerManager)}
	for k, v := range c.controllerManagerArgs {
		cmArgs[k] = v
	}
	kubeletPort, healthzPort := ifw.FreePort(t), ifw.FreePort(t)
	etcdClient := fmt.Sprintf("https://127.0.0.1:%d", c.ports.etcdClient)
	etcdPeer := fmt.Sprintf("https://127.0.0.1:%d", c.ports.etcdPeer)
	config := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %[1]s
  bindPort: %[2]d
nodeRegistration:
  name: %[3]s
  criSocket: %[4]s
  imagePullPolicy: IfNotPresent
  ignorePreflightErrors:
%[5]s
  kubeletExtraArgs:
  - name: node-ip
    value: 127.0.0.1
patches:
  directory: %[6]s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %[7]s
clusterName: seed-kubeadm
etcd:
  local:
    dataDir: %[8]s
    extraArgs:
%[9]s
apiServer:
  extraArgs:
%[10]s
controllerManager:
  extraArgs:
%[11]s
scheduler:
  extraArgs:
%[12]s
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
address: 127.0.0.1
port: %[13]d
healthzPort: %[14]d
`, bridgeAddress, c.ports.api, c.cpName, c.runtime, yamlList(append(machinePreflight, portPreflight...)), patches,
		kubeVersion, filepath.Join(c.dir, "etcd"),
		extraArgs(map[string]string{
			"listen-client-urls": etcdClient, "advertise-client-urls": etcdClient,
			"listen-peer-urls": etcdPeer, "initial-advertise-peer-urls": etcdPeer,
			"initial-cluster":     c.cpName + "=" + etcdPeer,
			"listen-metrics-urls": fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdMetrics),
		}),
		// There is no address the Endpoints of "kubernetes" may hold here
		// (see hack/start-control-plane.sh): no reconciler.
		extraArgs(map[string]string{"etcd-servers": etcdClient, "bind-address": bridgeAddress, "endpoint-reconciler-type": "none"}),
		extraArgs(cmArgs),
		extraArgs(map[string]string{"secure-port": fmt.Sprint(c.ports.scheduler)}),
		kubeletPort, healthzPort)
	configPath := filepath.Join(c.dir, "init.yaml")
	writeFile(t, configPath, config)

	start := time.Now()
	kubeadm := c.background("kubeadm-init", 4*time.Minute, filepath.Join(framework.BinDir(), "kubeadm"), "init", "--config", configPath,
		"--skip-phases", strings.Join(skippedPhases, ","), "-v=1")
	// kubeadm writes the kubelet's files, then asks systemd to (re)start
	// it; there is no systemd here, so the test does what the unit would.
	kubeadm.waitFor(t, startedKubelet)
	n := &initNode{}
	n.kubelet = c.startUnitKubelet(c.cpName, nil, filepath.Join(varLibKubelet, "kubeadm-flags.env"), "--v=2")
	n.args = n.kubelet.cmd.Args[1:]
	c.t.Cleanup(func() {
		c.stopKubelets()
		// The static pods outlive the kubelet, as on a real node.
		ifw.RemovePodsOfNode(t, c.cpName)
	})
	kubeadm.wait(t, 4*time.Minute)
	t.Logf("kubeadm init done after %v", time.Since(start).Round(time.Millisecond))
	c.admin = adminClient(t)
	return n
}

// joinNode is a node that `kubeadm join` set up below dir.
type joinNode struct {
	name    string
	dir     string // its /etc/kubernetes and /var/lib/kubelet
	kubelet *unitKubelet
	args    []string
	output  string // kubeadm join's
}

func (n *joinNode) etcKubernetes() string { return filepath.Join(n.dir, "etc-kubernetes") }
func (n *joinNode) varLibKubelet() string { return filepath.Join(n.dir, "var-lib-kubelet") }

// join runs `kubeadm join` for a node called name whose runtime is
// runtime. kubeadm writes to /etc/kubernetes and /var/lib/kubelet, which
// the control-plane node uses on this machine: it runs in a private mount
// namespace where those are the new node's own directories, and our
// kubelet (in the host's namespace, so that the runtime sees its volumes)
// is started with the unit's paths pointed at them, its own root and cert
// directories, and kubeadm's kubeletconfiguration patches for what two
// nodes on one machine cannot share (ports, static pod and log
// directories, cgroup root).
func (c *cluster) join(name, runtime string, kubeletPatch string) *joinNode {
	t := c.t
	t.Helper()
	n := &joinNode{name: name, dir: filepath.Join(c.dir, name)}
	patches := filepath.Join(n.dir, "patches")
	for _, d := range []string{n.etcKubernetes(), n.varLibKubelet(), patches, filepath.Join(n.dir, "manifests")} {
		os.MkdirAll(d, 0o755)
	}
	cgroupRoot := "/seed-" + name
	ifw.CreateCgroupRoot(t, cgroupRoot)
	writeFile(t, filepath.Join(patches, "kubeletconfiguration.yaml"), fmt.Sprintf(
		"port: %d\nhealthzPort: %d\ncgroupRoot: %s\nstaticPodPath: %s\npodLogsDir: %s\n%s",
		ifw.FreePort(t), ifw.FreePort(t), cgroupRoot, filepath.Join(n.dir, "manifests"), filepath.Join(n.dir, "pod-logs"), kubeletPatch))

	// A fresh bootstrap token, as an operator would make one.
	joinCmd := strings.Fields(strings.TrimSpace(c.run(time.Minute, filepath.Join(framework.BinDir(), "kubeadm"), "token", "create", "--print-join-command", "--kubeconfig", adminConf)))
	var endpoint, token, caHash string
	for i, f := range joinCmd {
		switch {
		case i == 2:
			endpoint = f
		case f == "--token" && i+1 < len(joinCmd):
			token = joinCmd[i+1]
		case f == "--discovery-token-ca-cert-hash" && i+1 < len(joinCmd):
			caHash = joinCmd[i+1]
		}
	}
	if endpoint == "" || token == "" || caHash == "" {
		t.Fatalf("cannot read kubeadm's join command %q", joinCmd)
	}
	config := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: %s
    token: %s
    caCertHashes:
    - %s
nodeRegistration:
  name: %s
  criSocket: %s
  ignorePreflightErrors:
%s
  kubeletExtraArgs:
  - name: node-ip
    value: 127.0.0.1
patches:
  directory: %s
`, endpoint, token, caHash, name, runtime, yamlList(append(machinePreflight, "Port-10250")), patches)
	configPath := filepath.Join(n.dir, "join.yaml")
	writeFile(t, configPath, config)

	script := fmt.Sprintf("mount --bind %s %s && mount --bind %s %s && exec %s join --config %s -v=1",
		n.etcKubernetes(), etcKubernetes, n.varLibKubelet(), varLibKubelet, filepath.Join(framework.BinDir(), "kubeadm"), configPath)
	kubeadm := c.background("kubeadm-join-"+name, 4*time.Minute, "unshare", "--mount", "--propagation", "private", "bash", "-c", script)
	kubeadm.waitFor(t, startedKubelet)
	rewrite := map[string]string{etcKubernetes + "/": n.etcKubernetes() + "/", varLibKubelet + "/": n.varLibKubelet() + "/"}
	n.kubelet = c.startUnitKubelet(name, rewrite, filepath.Join(n.varLibKubelet(), "kubeadm-flags.env"),
		"--root-dir="+n.varLibKubelet(), "--cert-dir="+filepath.Join(n.varLibKubelet(), "pki"), "--v=2")
	n.args = n.kubelet.cmd.Args[1:]
	kubeadm.wait(t, 4*time.Minute)
	n.output = kubeadm.output()
	return n
}

func (c *cluster) stopKubelets() {
	for _, k := range c.kubelets {
		k.stop()
		if c.t.Failed() {
			data, _ := os.ReadFile(k.log)
			c.t.Logf("kubelet %s log (last 60 lines):\n%s", k.name, ifw.Tail(string(data), 60))
		}
	}
}

func writeFile(t interface{ Fatal(...any) }, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func probePortPatch(port int) string {
	return fmt.Sprintf("- op: replace\n  path: /spec/containers/0/ports/0/containerPort\n  value: %d\n", port)
}

// extraArgs renders kubeadm v1beta4 extraArgs (sorted, for stable files).
func extraArgs(args map[string]string) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "    - name: %s\n      value: %q\n", k, args[k])
	}
	return strings.TrimRight(b.String(), "\n")
}

func yamlList(items []string) string {
	var b strings.Builder
	for _, i := range items {
		fmt.Fprintf(&b, "  - %s\n", i)
	}
	return strings.TrimRight(b.String(), "\n")
}
