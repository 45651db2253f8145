//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// localNode is a standalone kubelet serving the local API, driven with
// the real kubectl.
type localNode struct {
	*ifw.Kubelet
	t          *testing.T
	kubeconfig string
	home       string
	podLogsDir string
}

// standaloneWithLocalAPI starts a standalone kubelet (no API server) with
// --local-api-address on a free loopback port and waits for its kubeconfig.
// Its podLogsDir is private: /var/log/pods is shared with the other
// kubelets on the machine, which remove the log directories of pods they do
// not know, and this test reads logs.
func standaloneWithLocalAPI(t *testing.T, extraConfig ...string) *localNode {
	t.Helper()
	logs := t.TempDir()
	k := ifw.NewKubelet(t, append([]string{"podLogsDir: " + logs}, extraConfig...)...)
	addr := fmt.Sprintf("127.0.0.1:%d", ifw.FreePort(t))
	k.ExtraArgs = append(k.ExtraArgs, "--local-api-address", addr)
	k.Start()
	n := &localNode{Kubelet: k, t: t, kubeconfig: filepath.Join(k.RootDir, "local-api", "kubeconfig"), home: t.TempDir(), podLogsDir: logs}
	eventually(t, 30*time.Second, "the local API", func() (bool, error) {
		if _, err := os.Stat(n.kubeconfig); err != nil {
			return false, err
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err
		}
		c.Close()
		return true, nil
	})
	return n
}

// command is kubectl with the node's kubeconfig and a private HOME (its
// discovery cache).
func (n *localNode) command(ctx context.Context, args ...string) *exec.Cmd {
	bin := filepath.Join(framework.BinDir(), "kubectl")
	if _, err := os.Stat(bin); err != nil {
		n.t.Fatalf("%s is missing: build it with `bash hack/build-cluster-tools.sh kubectl`", bin)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", n.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+n.home, "KUBECONFIG=")
	return cmd
}

// kubectl runs kubectl and returns its standard output, or an error with
// its standard error.
func (n *localNode) kubectl(args ...string) (string, error) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := n.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func (n *localNode) mustKubectl(args ...string) string {
	n.t.Helper()
	out, err := n.kubectl(args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return out
}

// apply writes manifest to a file and kubectl-applies it.
func (n *localNode) apply(manifest string, extra ...string) (string, error) {
	n.t.Helper()
	f := filepath.Join(n.t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		n.t.Fatal(err)
	}
	return n.kubectl(append([]string{"apply", "-f", f}, extra...)...)
}

// lines streams a background kubectl's output lines.
func (n *localNode) lines(args ...string) (<-chan string, func()) {
	n.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := n.command(ctx, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		n.t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	stop := func() {
		cancel()
		cmd.Wait()
		if n.t.Failed() {
			n.t.Logf("kubectl %s stderr: %s", strings.Join(args, " "), stderr.String())
		}
	}
	n.t.Cleanup(stop)
	return ch, stop
}

// waitLine waits for a line matching match.
func waitLine(t *testing.T, ch <-chan string, timeout time.Duration, what string, match func(string) bool) string {
	t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before %s; saw:\n%s", what, strings.Join(seen, "\n"))
			}
			seen = append(seen, line)
			if match(line) {
				return line
			}
		case <-deadline:
			t.Fatalf("no %s within %v; saw:\n%s", what, timeout, strings.Join(seen, "\n"))
		}
	}
}

func localPod(name, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
`, name, ifw.BusyboxImage, command)
}

// openPTY opens a pseudo-terminal pair (posix_openpt, unlockpt, ptsname).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	var unlock int32
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Fatalf("unlockpt: %v", errno)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

func TestKubectlDrivesAStandaloneNode(t *testing.T) {
	n := standaloneWithLocalAPI(t)
	n.WriteManifest("web.yaml", localPod("web", "echo started; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"))
	n.WriteManifest("crash.yaml", localPod("crash", "echo attempt-$(cat /proc/uptime); sleep 1; exit 3"))

	// get pods -w sees an applied pod go Pending to Running.
	watch, stopWatch := n.lines("get", "pods", "-w")
	waitLine(t, watch, time.Minute, "web in the first listing", func(l string) bool { return strings.HasPrefix(l, "web ") })
	if out, err := n.apply(localPod("app", "echo app-started; sleep 3600")); err != nil || !strings.Contains(out, "pod/app created") {
		t.Fatalf("apply: %q %v", out, err)
	}
	waitLine(t, watch, time.Minute, "app Pending", func(l string) bool {
		return strings.HasPrefix(l, "app ") && (strings.Contains(l, "Pending") || strings.Contains(l, "ContainerCreating"))
	})
	waitLine(t, watch, time.Minute, "app Running", func(l string) bool {
		return strings.HasPrefix(l, "app ") && strings.Contains(l, " 1/1 ") && strings.Contains(l, "Running")
	})
	stopWatch()
	if _, err := os.Stat(filepath.Join(n.ManifestDir, "pod_default_app.yaml")); err != nil {
		t.Fatalf("apply wrote no manifest: %v", err)
	}
	if out, err := n.apply(localPod("app", "echo app-started; sleep 3600")); err != nil || !strings.Contains(out, "pod/app unchanged") {
		t.Fatalf("second apply: %q %v", out, err)
	}

	// get -o wide: upstream's columns, the pod IP on the CNI bridge.
	wide := n.mustKubectl("get", "pods", "-o", "wide")
	if !strings.Contains(wide, "NOMINATED NODE") || !strings.Contains(wide, ifw.PodSubnetPrefix) || !strings.Contains(wide, n.NodeName) {
		t.Errorf("get pods -o wide:\n%s", wide)
	}

	// logs, logs --tail, logs -f.
	if out := n.mustKubectl("logs", "web"); !strings.HasPrefix(out, "started\ntick 1\n") {
		t.Errorf("logs: %q", out)
	}
	if out := n.mustKubectl("logs", "app", "--tail=1"); out != "app-started\n" {
		t.Errorf("logs --tail=1: %q", out)
	}
	follow, stopFollow := n.lines("logs", "-f", "--tail=1", "web")
	first := waitLine(t, follow, 30*time.Second, "a followed line", func(l string) bool { return strings.HasPrefix(l, "tick ") })
	var at int
	fmt.Sscanf(first, "tick %d", &at)
	waitLine(t, follow, 30*time.Second, "a later line while following", func(l string) bool {
		var i int
		fmt.Sscanf(l, "tick %d", &i)
		return i >= at+3
	})
	stopFollow()

	// attach to the running container's output.
	attached, stopAttach := n.lines("attach", "web")
	waitLine(t, attached, 30*time.Second, "a tick through attach", func(l string) bool { return strings.HasPrefix(l, "tick ") })
	stopAttach()

	// label and field selectors.
	if out := n.mustKubectl("get", "pods", "--field-selector", "metadata.name=web", "--no-headers"); !strings.HasPrefix(out, "web ") || strings.Count(out, "\n") != 1 {
		t.Errorf("get pods --field-selector metadata.name=web: %q", out)
	}
	if out, err := n.kubectl("get", "pods", "-l", "app=none"); err != nil || out != "" {
		t.Errorf("get pods -l app=none: %q %v", out, err)
	}

	// logs --previous: the crashed container's output, not the current one's.
	eventually(t, time.Minute, "crash restarted", func() (bool, error) {
		out, err := n.kubectl("get", "pod", "crash", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
		return out != "" && out != "0", fmt.Errorf("%q %v", out, err)
	})
	prev := n.mustKubectl("logs", "crash", "--previous")
	if !strings.HasPrefix(prev, "attempt-") || strings.Count(prev, "\n") != 1 {
		t.Errorf("logs --previous: %q", prev)
	}
	eventually(t, 30*time.Second, "the current crash container's output", func() (bool, error) {
		cur, err := n.kubectl("logs", "crash")
		return strings.HasPrefix(cur, "attempt-") && cur != prev, fmt.Errorf("current %q previous %q %v", cur, prev, err)
	})

	// exec, exec -it through a pty (its exit code comes back).
	if out := n.mustKubectl("exec", "web", "--", "sh", "-c", "echo in-$(hostname)"); out != "in-web-"+n.NodeName+"\n" {
		t.Errorf("exec: %q", out)
	}
	master, slave := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := n.command(ctx, "exec", "-it", "web", "--", "sh")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen bytes.Buffer
	readDone := make(chan struct{})
	go func() { io.Copy(&screen, master); close(readDone) }()
	fmt.Fprintf(master, "tty; echo pty-ok-$((6*7)); exit 7\n")
	err := cmd.Wait()
	<-readDone
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("exec -it exit: %v, want 7", err)
	}
	if out := screen.String(); !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "pty-ok-42") {
		t.Errorf("exec -it screen:\n%s", out)
	}

	// port-forward to a server in a pod.
	if _, err := n.apply(localPod("srv", "mkdir -p /www && echo served-by-pod > /www/index.html && exec httpd -f -p 8080 -h /www")); err != nil {
		t.Fatal(err)
	}
	n.mustKubectl("wait", "--for=condition=Ready", "pod/srv", "--timeout=60s")
	port := ifw.FreePort(t)
	pf, _ := n.lines("port-forward", "pod/srv", fmt.Sprintf("%d:8080", port))
	waitLine(t, pf, 30*time.Second, "port-forward ready", func(l string) bool { return strings.HasPrefix(l, "Forwarding from 127.0.0.1") })
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
	if err != nil {
		t.Fatalf("through port-forward: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "served-by-pod" {
		t.Errorf("through port-forward: %q", body)
	}

	// get events: the kubelet's events about the pods, upstream's columns.
	events := n.mustKubectl("get", "events")
	for _, want := range []string{"LAST SEEN", "Started", "pod/app", "Started container main"} {
		if !strings.Contains(events, want) {
			t.Errorf("get events lacks %q:\n%s", want, events)
		}
	}
	if out := n.mustKubectl("describe", "pod", "app"); !strings.Contains(out, "Created container: main") {
		t.Errorf("describe pod shows no events:\n%s", out)
	}

	// delete: the manifest goes, kubectl waits until the pod has stopped.
	if out := n.mustKubectl("delete", "pod", "app"); !strings.Contains(out, `pod "app" deleted`) {
		t.Errorf("delete: %q", out)
	}
	if _, err := os.Stat(filepath.Join(n.ManifestDir, "pod_default_app.yaml")); !os.IsNotExist(err) {
		t.Errorf("the manifest is still there: %v", err)
	}
	if out, err := n.kubectl("get", "pod", "app"); err == nil || !strings.Contains(err.Error(), `pods "app" not found`) {
		t.Errorf("get after delete: %q %v", out, err)
	}
	if n := len(ifw.PodContainers(t, uidOfApp(t, n))); n != 0 {
		t.Errorf("the deleted pod still has %d containers", n)
	}
	// The node, as computed locally.
	if out := n.mustKubectl("get", "nodes"); !strings.Contains(out, n.NodeName) || !strings.Contains(out, "Ready") {
		t.Errorf("get nodes:\n%s", out)
	}
}

// uidOfApp is the UID the deleted pod had (from its log directory name).
func uidOfApp(t *testing.T, n *localNode) string {
	matches, _ := filepath.Glob(filepath.Join(n.podLogsDir, "default_app-"+n.NodeName+"_*"))
	if len(matches) == 0 {
		return "none"
	}
	return matches[0][strings.LastIndex(matches[0], "_")+1:]
}

func TestKubectlConfigMapEditReachesTheMountedFile(t *testing.T) {
	n := standaloneWithLocalAPI(t)
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  greeting: " + v + "\n"
	}
	pod := localPod("reader", "while true; do cat /cfg/greeting; echo; sleep 0.2; done") + `    volumeMounts:
    - {name: cfg, mountPath: /cfg}
  volumes:
  - name: cfg
    configMap: {name: cfg}
`
	if out, err := n.apply(cm("hello") + "---\n" + pod); err != nil {
		t.Fatalf("apply: %q %v", out, err)
	}
	n.mustKubectl("wait", "--for=condition=Ready", "pod/reader", "--timeout=60s")
	if out := n.mustKubectl("get", "configmap", "cfg", "-o", "jsonpath={.data.greeting}"); out != "hello" {
		t.Errorf("get configmap: %q", out)
	}
	start := time.Now()
	if out, err := n.apply(cm("bonjour")); err != nil || !strings.Contains(out, "configmap/cfg configured") {
		t.Fatalf("apply the edit: %q %v", out, err)
	}
	eventually(t, 60*time.Second, "the edit inside the container", func() (bool, error) {
		out, err := n.kubectl("exec", "reader", "--", "cat", "/cfg/greeting")
		return out == "bonjour", fmt.Errorf("%q %v", out, err)
	})
	took := time.Since(start)
	t.Logf("a ConfigMap edit through kubectl reached the mounted file in %v", took.Round(time.Millisecond))
	if took > time.Minute { // the sync period
		t.Errorf("the edit took %v, more than the sync period", took)
	}
	if out := n.mustKubectl("get", "pods", "reader", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"); out != "0" {
		t.Errorf("the reader restarted (%s): an edit must not restart it", out)
	}

	// Strategic merge patches as kubectl sends them: label's two-way
	// patch, a hand-written one with a "$patch": "replace" directive, and
	// a malformed directive refused as the API server does (400).
	n.mustKubectl("label", "configmap", "cfg", "tier=web")
	n.mustKubectl("patch", "configmap", "cfg", "-p", `{"data":{"$patch":"replace","only":"x"}}`)
	if out := n.mustKubectl("get", "configmap", "cfg", "-o", "jsonpath={.metadata.labels.tier} {.data}"); out != `web {"only":"x"}` {
		t.Errorf("after label and patch: %q", out)
	}
	if _, err := n.kubectl("patch", "configmap", "cfg", "-p", `{"data":{"$patch":"merge","k":"v"}}`); err == nil ||
		!strings.Contains(err.Error(), "BadRequest") || !strings.Contains(err.Error(), "unknown patch type: merge") {
		t.Errorf("a bad directive: %v", err)
	}
}

func TestKubectlBadInput(t *testing.T) {
	n := standaloneWithLocalAPI(t)
	before, _ := os.ReadDir(n.ManifestDir)

	// An invalid pod: the API server's error text; nothing written.
	_, err := n.apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: main\n    image: \"\"\n    imagePullPolicy: Sometimes\n")
	if err == nil || !strings.Contains(err.Error(), `The Pod "bad" is invalid:`) || !strings.Contains(err.Error(), "spec.containers[0].image: Required value") ||
		!strings.Contains(err.Error(), `spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"`) {
		t.Errorf("invalid pod: %v", err)
	}
	// An unknown field, strict as kubectl asks.
	_, err = n.apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  containers:\n  - name: main\n    image: busybox\n    imagePullPolice: Always\n")
	if err == nil || !strings.Contains(err.Error(), `strict decoding error: unknown field "spec.containers[0].imagePullPolice"`) {
		t.Errorf("unknown field: %v", err)
	}
	// A kind the kubelet does not serve.
	_, err = n.apply("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: busybox}]}\n")
	if err == nil || !strings.Contains(err.Error(), `no matches for kind "Deployment" in version "apps/v1"`) {
		t.Errorf("deployment: %v", err)
	}
	if _, err := n.kubectl("get", "services"); err == nil || !strings.Contains(err.Error(), `the server doesn't have a resource type "services"`) {
		t.Errorf("get services: %v", err)
	}
	if _, err := n.apply(localPod("web", "sleep 3600"), "--server-side"); err == nil || !strings.Contains(err.Error(), "Server-side apply not available on the server") {
		t.Errorf("server-side apply: %v", err)
	}
	after, _ := os.ReadDir(n.ManifestDir)
	if len(after) != len(before) {
		t.Errorf("refused input left files in staticPodPath: %d before, %d after", len(before), len(after))
	}

	// A pod whose ConfigMap is missing waits, then starts once it is applied.
	waiter := localPod("waiter", "cat /s/k; echo; sleep 3600") + `    volumeMounts:
    - {name: s, mountPath: /s}
  volumes:
  - name: s
    configMap: {name: later}
`
	if out, err := n.apply(waiter); err != nil || !strings.Contains(out, "pod/waiter created") {
		t.Fatalf("apply waiter: %q %v", out, err)
	}
	eventually(t, time.Minute, "FailedMount for the missing ConfigMap", func() (bool, error) {
		out, err := n.kubectl("get", "events", "--field-selector", "involvedObject.name=waiter,reason=FailedMount")
		return strings.Contains(out, `configmap "later" not found`), fmt.Errorf("%q %v", out, err)
	})
	if out := n.mustKubectl("get", "pod", "waiter", "--no-headers"); !strings.Contains(out, "ContainerCreating") {
		t.Errorf("waiting pod: %q", out)
	}
	start := time.Now()
	if _, err := n.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later}\ndata: {k: arrived}\n"); err != nil {
		t.Fatal(err)
	}
	n.mustKubectl("wait", "--for=condition=Ready", "pod/waiter", "--timeout=60s")
	t.Logf("the waiting pod was Ready %v after its ConfigMap was applied", time.Since(start).Round(time.Millisecond))
	// Ready can come before containerd has copied the output to the log.
	eventually(t, 30*time.Second, "the waiter's output in its log", func() (bool, error) {
		out, err := n.kubectl("logs", "waiter")
		return out == "arrived\n", fmt.Errorf("%q %v", out, err)
	})
}

func TestLocalSecretPullsFromAPrivateRegistry(t *testing.T) {
	registry, authorized := ifw.PrivateRegistry(t, "e2e", "pa55w0rd")
	image := registry + "/pulltest:1"
	_, is := ifw.NewCRIClient(t)
	ifw.RemoveImageIfPresent(t, is, image)
	n := standaloneWithLocalAPI(t)
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{registry: map[string]string{"username": "e2e", "password": "pa55w0rd"}}})
	secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '%s'\n", cfg)
	pod := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: private}\nspec:\n  terminationGracePeriodSeconds: 1\n  imagePullSecrets: [{name: regcred}]\n  containers:\n  - {name: main, image: %s, imagePullPolicy: Always, command: [sleep, '3600']}\n", image)
	if out, err := n.apply(secret + "---\n" + pod); err != nil {
		t.Fatalf("apply: %q %v", out, err)
	}
	n.mustKubectl("wait", "--for=condition=Ready", "pod/private", "--timeout=90s")
	if authorized.Load() == 0 {
		t.Fatal("the registry saw no authorized request")
	}
	st, err := is.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil || st.Image == nil {
		t.Fatalf("image %s not on the node: %v", image, err)
	}
	if out := n.mustKubectl("get", "secret", "regcred", "--no-headers"); !strings.Contains(out, "kubernetes.io/dockerconfigjson") {
		t.Errorf("get secret: %q", out)
	}
}

// In cluster mode static pods keep upstream's rules: a ConfigMap document
// in staticPodPath and a pod referencing a ConfigMap are refused; the
// plain pod beside them runs and gets its mirror pod.
func TestClusterModeRefusesLocalObjects(t *testing.T) {
	n := joinNode(t)
	cmDoc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  greeting: hello\n"
	n.WriteManifest("objects.yaml", cmDoc)
	n.WriteManifest("reader.yaml", localPod("reader", "cat /cfg/greeting; sleep 3600")+`    volumeMounts:
    - {name: cfg, mountPath: /cfg}
  volumes:
  - name: cfg
    configMap: {name: cfg}
`)
	n.WriteManifest("plain.yaml", localPod("plain", "sleep 3600"))
	n.Start()
	ctx := ctxT(t)
	eventually(t, 2*time.Minute, "the plain static pod's mirror pod", func() (bool, error) {
		_, err := n.client.CoreV1().Pods("default").Get(ctx, "plain-"+n.NodeName, metav1.GetOptions{})
		return err == nil, err
	})
	if _, err := n.client.CoreV1().Pods("default").Get(ctx, "reader-"+n.NodeName, metav1.GetOptions{}); err == nil {
		t.Error("a static pod referencing a ConfigMap got a mirror pod in cluster mode")
	}
	eventually(t, 30*time.Second, "upstream's refusals in the log", func() (bool, error) {
		data, _ := os.ReadFile(n.LogPath)
		log := string(data)
		return strings.Contains(log, "static pods may not reference configmaps (via configmap volumes)") &&
			strings.Contains(log, "unsupported object v1 ConfigMap"), fmt.Errorf("not yet")
	})
	pods, err := n.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Name != "plain-"+n.NodeName {
			t.Errorf("unexpected pod %s on the node", p.Name)
		}
	}
	_ = v1.PodRunning
}
