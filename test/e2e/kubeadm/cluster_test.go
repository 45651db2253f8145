//go:build e2e

package kubeadm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// kubeadm's fixed paths on a node.
const (
	etcKubernetes  = "/etc/kubernetes"
	varLibKubelet  = "/var/lib/kubelet"
	adminConf      = etcKubernetes + "/admin.conf"
	kubeVersion    = framework.KubeVersion
	bridgeName     = "cni0"
	bridgeAddress  = "10.88.0.1" // the CNI bridge of hack/setup-node.sh
	bridgeCIDR     = "10.88.0.1/16"
	startedKubelet = "[kubelet-start] Starting the kubelet"
)

// Preflight checks the tests tell kubeadm to ignore, each with its reason.
var (
	// machinePreflight: this machine is cgroup v1 (kubeadm refuses it
	// unless told; the kubelet runs with failCgroupV1: false).
	machinePreflight = []string{"SystemVerification"}
	// portPreflight: kubeadm checks the default ports, which the shared
	// test control plane (hack/start-control-plane.sh) and other test
	// kubelets may hold; this cluster runs etcd, the controller-manager,
	// the scheduler and the kubelets on the free ports in its
	// configuration instead.
	portPreflight = []string{"Port-2379", "Port-2380", "Port-10257", "Port-10259", "Port-10250"}
	// skippedPhases: kube-proxy programs the host's iptables on a machine
	// other test runs share (and is not part of the kubelet); CoreDNS's
	// image is not built here and cannot be pulled (no internet).
	skippedPhases = []string{"addon/kube-proxy", "addon/coredns"}
)

// ports of one kubeadm cluster, all free on loopback when it starts.
type ports struct {
	api, etcdClient, etcdPeer, etcdMetrics, controllerManager, scheduler int
}

// cluster is a kubeadm cluster on this machine: the control-plane node
// runs in kubeadm's paths, joined nodes below dir.
type cluster struct {
	t       *testing.T
	dir     string
	binDir  string // holds our kubelet as "kubelet": kubeadm runs `kubelet --version`
	kubelet string
	ports   ports
	cpName  string
	runtime string
	admin   kubernetes.Interface
	// controllerManagerArgs are extra kube-controller-manager flags.
	controllerManagerArgs map[string]string
	kubelets              []*unitKubelet
}

func newCluster(t *testing.T, cpName string) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("kubeadm needs root; run the e2e tests as root")
	}
	for _, b := range []string{"kubeadm", "kubectl"} {
		if _, err := os.Stat(filepath.Join(framework.BinDir(), b)); err != nil {
			t.Fatalf("%s is missing: build it with `bash hack/build-cluster-tools.sh %s`", b, b)
		}
	}
	c := &cluster{t: t, dir: t.TempDir(), kubelet: ifw.KubeletBinary(t), cpName: cpName, runtime: ifw.RuntimeEndpoint()}
	c.binDir = filepath.Join(c.dir, "bin")
	os.MkdirAll(c.binDir, 0o755)
	if err := os.Symlink(c.kubelet, filepath.Join(c.binDir, "kubelet")); err != nil {
		t.Fatal(err)
	}
	c.ports = ports{
		api: ifw.FreePort(t), etcdClient: ifw.FreePort(t), etcdPeer: ifw.FreePort(t), etcdMetrics: ifw.FreePort(t),
		controllerManager: ifw.FreePort(t), scheduler: ifw.FreePort(t),
	}
	return c
}

// run runs a command with our kubelet first in PATH and returns its
// combined output; the test fails when it fails.
func (c *cluster) run(timeout time.Duration, name string, args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "PATH="+c.binDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectl runs kubectl as the cluster's admin.
func (c *cluster) kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "kubectl"), append([]string{"--kubeconfig", adminConf}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// takeOverPaths moves anything at kubeadm's paths aside and puts it back
// when the test ends, after removing what the test left there.
func (c *cluster) takeOverPaths() {
	c.t.Helper()
	for _, p := range []string{etcKubernetes, varLibKubelet} {
		backup := ""
		if _, err := os.Lstat(p); err == nil {
			backup = fmt.Sprintf("%s.seed-e2e-backup-%d", p, time.Now().UnixNano())
			if err := os.Rename(p, backup); err != nil {
				c.t.Fatalf("move %s aside: %v", p, err)
			}
			c.t.Logf("moved %s aside to %s for the test", p, backup)
		}
		c.t.Cleanup(func() {
			unmountBelow(c.t, p)
			if err := os.RemoveAll(p); err != nil {
				c.t.Errorf("remove %s: %v", p, err)
			}
			if backup != "" {
				if err := os.Rename(backup, p); err != nil {
					c.t.Errorf("restore %s from %s: %v", p, backup, err)
				}
			}
		})
	}
}

// unmountBelow unmounts everything mounted below dir, deepest first.
func unmountBelow(t *testing.T, dir string) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var below []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			below = append(below, f[1])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(below)))
	for _, m := range below {
		if err := syscall.Unmount(m, 0); err != nil {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
}

// ensureBridge makes sure the CNI bridge holds the address the API server
// advertises (the bridge plugin creates it with the first pod; a machine
// that ran none has no bridge yet).
func ensureBridge(t *testing.T) {
	t.Helper()
	out, _ := exec.Command("ip", "-4", "-o", "addr", "show", "dev", bridgeName).CombinedOutput()
	if strings.Contains(string(out), " "+bridgeCIDR+" ") {
		return
	}
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", bridgeCIDR, "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil && !strings.Contains(string(out), "File exists") {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}

// loadImages puts the control-plane images kubeadm runs into runtime.
func (c *cluster) loadImages(runtime string) {
	c.t.Helper()
	start := time.Now()
	c.run(5*time.Minute, "bash", filepath.Join(framework.RepoRoot(), "hack", "kubeadm-images.sh"), runtime)
	c.t.Logf("control-plane images in %s after %v", runtime, time.Since(start).Round(time.Millisecond))
}

// unitKubelet is one of our kubelets started the way kubeadm's systemd
// unit starts it.
type unitKubelet struct {
	name   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// startUnitKubelet starts our kubelet with the command line of kubeadm's
// drop-in (its flags plus kubeadm-flags.env) and extra flags; rewrite maps
// kubeadm's paths to where this node's files are (nil for the node that
// lives in them).
func (c *cluster) startUnitKubelet(name string, rewrite map[string]string, flagsEnv string, extra ...string) *unitKubelet {
	c.t.Helper()
	args, err := framework.UnitCommand(dropIn(), map[string]string{
		varLibKubelet + "/kubeadm-flags.env": flagsEnv,
		"/etc/default/kubelet":               filepath.Join(c.dir, "no-etc-default-kubelet"),
	})
	if err != nil {
		c.t.Fatal(err)
	}
	for i, a := range args {
		for from, to := range rewrite {
			a = strings.ReplaceAll(a, from, to)
		}
		args[i] = a
	}
	args = append(args, extra...)
	k := &unitKubelet{name: name, log: filepath.Join(c.dir, name+"-kubelet.log"), exited: make(chan struct{})}
	logf, err := os.Create(k.log)
	if err != nil {
		c.t.Fatal(err)
	}
	k.cmd = exec.Command(c.kubelet, args...)
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	c.t.Logf("starting kubelet %s: kubelet %s", name, strings.Join(args, " "))
	if err := k.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		k.err = k.cmd.Wait()
		logf.Close()
		close(k.exited)
	}()
	c.kubelets = append(c.kubelets, k)
	return k
}

func (k *unitKubelet) stop() {
	select {
	case <-k.exited:
		return
	default:
	}
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		k.cmd.Process.Kill()
		<-k.exited
	}
}

// warnings are the kubelet's "not supported" lines from its log.
func (k *unitKubelet) warnings(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(k.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "but not supported by this kubelet") || strings.Contains(line, "accepted for compatibility but not supported") {
			out = append(out, line)
		}
	}
	return out
}

// dropIn is kubeadm's systemd drop-in, as its package installs it.
func dropIn() string {
	return filepath.Join(framework.RepoRoot(), "internal", "app", "options", "testdata", "kubeadm", "10-kubeadm.conf")
}

// parseWarnings parses a node's kubelet command line as the kubelet does
// and returns the "unsupported" warnings it draws.
func parseWarnings(t *testing.T, args []string) []string {
	t.Helper()
	o, err := options.Parse(args)
	if err != nil {
		t.Fatalf("kubelet %s: %v", strings.Join(args, " "), err)
	}
	if err := options.Validate(o); err != nil {
		t.Fatalf("kubelet %s: %v", strings.Join(args, " "), err)
	}
	return o.Warnings
}

// background runs kubeadm with our kubelet in PATH, logging to a file; it
// returns the log's path and a channel closed (with the error set) when it
// exits.
type process struct {
	log    string
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

func (c *cluster) background(name string, timeout time.Duration, argv ...string) *process {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	p := &process{log: filepath.Join(c.dir, name+".log"), done: make(chan struct{}), cancel: cancel}
	logf, err := os.Create(p.log)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+c.binDir+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logf, logf
	c.t.Logf("running %s", strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		cancel()
		close(p.done)
	}()
	c.t.Cleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

func (p *process) output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// waitFor waits until the process printed want (it fails the test when
// the process exits first).
func (p *process) waitFor(t *testing.T, want string) {
	t.Helper()
	ifw.Eventually(t, 3*time.Minute, 50*time.Millisecond, fmt.Sprintf("%q in %s", want, p.log), func() (bool, error) {
		if strings.Contains(p.output(), want) {
			return true, nil
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before printing %q:\n%s", p.log, p.err, want, ifw.Tail(p.output(), 40))
		default:
		}
		return false, nil
	})
}

// wait waits for the process to exit successfully.
func (p *process) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v:\n%s", p.log, timeout, ifw.Tail(p.output(), 40))
	}
	if p.err != nil {
		t.Fatalf("%s: %v:\n%s", p.log, p.err, ifw.Tail(p.output(), 60))
	}
}

// adminClient is a clientset from kubeadm's admin.conf.
func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminConf)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func waitNodeReady(t *testing.T, cs kubernetes.Interface, name string, timeout time.Duration) *v1.Node {
	t.Helper()
	var node *v1.Node
	ifw.Eventually(t, timeout, 100*time.Millisecond, "node "+name+" Ready", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = n
		return framework.NodeReady(n), fmt.Errorf("conditions %v", n.Status.Conditions)
	})
	return node
}

// sleeperPod is a busybox pod running command (sleep by default) with a
// short grace period.
func sleeperPod(name string, command ...string) *v1.Pod {
	if len(command) == 0 {
		command = []string{"sleep", "3600"}
	}
	grace := int64(2)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "main", Image: ifw.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: command}},
		},
	}
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// runQuiet runs a command and returns its standard output (its standard
// error too when it fails).
func runQuiet(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}
