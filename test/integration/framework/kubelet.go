package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// KubeletBinary builds ./cmd/kubelet once per test binary and returns its path.
func KubeletBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubelet-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "kubelet")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/kubelet")
		cmd.Dir = RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/kubelet: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

var (
	toolsMu sync.Mutex
	tools   = map[string]string{}
)

// BuildBinary builds the main package pkg (a path below the repository,
// e.g. "./test/plugins/credential-provider") once per test binary and
// returns the binary's path.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	toolsMu.Lock()
	defer toolsMu.Unlock()
	if bin, ok := tools[pkg]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", "test-bin-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	tools[pkg] = bin
	return bin
}

// handedOut are the ports FreePort returned in this process: the kernel
// may hand a port just closed out again, and a kubelet given the same port
// for two servers fails to start ("address already in use").
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort returns a free TCP port on loopback, never one it returned
// before in this process.
func FreePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

// Kubelet is one kubelet process under test, with its own root directory,
// manifest directory and node name.
type Kubelet struct {
	t            testing.TB
	NodeName     string
	RootDir      string
	ManifestDir  string
	ConfigPath   string
	ReadOnlyPort int
	HealthzPort  int
	// Port is the authenticated kubelet API (10250 upstream).
	Port int
	// CgroupRoot is the kubelet's own cgroupRoot, created for it.
	CgroupRoot string
	LogPath    string
	ExtraArgs  []string
	// Binary, when set, runs another kubelet (the upstream one) instead
	// of ours, with the same configuration.
	Binary string
	// Wrapper, when set, is the command the kubelet runs under (e.g.
	// nsenter into a runtime's mount namespace); Env is added to the
	// kubelet's environment.
	Wrapper []string
	Env     []string
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
}

// StandaloneAuth is the kubelet API's authentication for standalone tests:
// no API server to ask, so anonymous requests are allowed, as upstream
// standalone set-ups do.
const StandaloneAuth = `authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow`

// NewKubelet prepares (does not start) a standalone kubelet with a unique
// node name. extraConfig lines are appended to its KubeletConfiguration.
func NewKubelet(t testing.TB, extraConfig ...string) *Kubelet {
	t.Helper()
	return NewKubeletWithAuth(t, StandaloneAuth, extraConfig...)
}

// NewKubeletWithAuth is NewKubelet with the given authentication and
// authorization configuration (YAML lines).
func NewKubeletWithAuth(t testing.TB, authConfig string, extraConfig ...string) *Kubelet {
	t.Helper()
	dir := t.TempDir()
	k := &Kubelet{
		t:            t,
		NodeName:     UniqueName("node"),
		RootDir:      filepath.Join(dir, "root"),
		ManifestDir:  filepath.Join(dir, "manifests"),
		ConfigPath:   filepath.Join(dir, "config.yaml"),
		ReadOnlyPort: FreePort(t),
		HealthzPort:  FreePort(t),
		Port:         FreePort(t),
		LogPath:      filepath.Join(dir, "kubelet.log"),
	}
	k.CgroupRoot = "/seed-" + k.NodeName
	CreateCgroupRoot(t, k.CgroupRoot)
	if err := os.MkdirAll(k.ManifestDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
fileCheckFrequency: 20s
readOnlyPort: %d
healthzPort: %d
healthzBindAddress: 127.0.0.1
address: 127.0.0.1
port: %d
containerRuntimeEndpoint: %s
failSwapOn: false
failCgroupV1: false
cgroupRoot: %s
%s
%s
`, k.ManifestDir, k.ReadOnlyPort, k.HealthzPort, k.Port, RuntimeEndpoint(), k.CgroupRoot, authConfig, strings.Join(extraConfig, "\n"))
	if err := os.WriteFile(k.ConfigPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.Stop()
		RemovePodsOfNode(t, k.NodeName)
		// A stopped kubelet leaves its pods' mounts (tmpfs volumes,
		// subPath binds) in place, as upstream's does; the pods are gone
		// now, so the test's directories can go too.
		UnmountBelow(t, k.RootDir)
		if t.Failed() {
			if data, err := os.ReadFile(k.LogPath); err == nil {
				t.Logf("kubelet log (last 60 lines):\n%s", Tail(string(data), 60))
			}
		}
	})
	return k
}

// UnmountBelow unmounts everything mounted at or below dir, deepest first.
func UnmountBelow(t testing.TB, dir string) {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Errorf("cleanup: read the mount table: %v", err)
		return
	}
	sort.Slice(ms, func(i, j int) bool { return len(ms[i].Mountpoint) > len(ms[j].Mountpoint) })
	for _, m := range ms {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil {
			t.Errorf("cleanup: unmount %s: %v", m.Mountpoint, err)
		}
	}
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Args are the command-line arguments the kubelet is started with.
func (k *Kubelet) Args() []string {
	return append([]string{"--config", k.ConfigPath, "--root-dir", k.RootDir, "--cert-dir", filepath.Join(k.RootDir, "pki"),
		"--hostname-override", k.NodeName, "--v", "3"}, k.ExtraArgs...)
}

// Start starts the kubelet and waits until its healthz answers ok.
func (k *Kubelet) Start() {
	k.t.Helper()
	logf, err := os.OpenFile(k.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		k.t.Fatal(err)
	}
	bin := k.Binary
	if bin == "" {
		bin = KubeletBinary(k.t)
	}
	argv := append(append(append([]string{}, k.Wrapper...), bin), k.Args()...)
	k.cmd = exec.Command(argv[0], argv[1:]...)
	k.cmd.Env = append(os.Environ(), k.Env...)
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	if err := k.cmd.Start(); err != nil {
		k.t.Fatalf("start kubelet: %v", err)
	}
	k.exited = make(chan struct{})
	go func() {
		k.exitErr = k.cmd.Wait()
		logf.Close()
		close(k.exited)
	}()
	Eventually(k.t, 30*time.Second, 50*time.Millisecond, "kubelet healthz", func() (bool, error) {
		select {
		case <-k.exited:
			data, _ := os.ReadFile(k.LogPath)
			k.t.Fatalf("kubelet exited during start-up: %v\n%s", k.exitErr, Tail(string(data), 40))
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.HealthzPort))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	// The kubelet API starts once its serving certificate is ready (a
	// self-signed CA and leaf take a moment), after healthz: tests that
	// call it right away wait for it to listen.
	if cfg, err := os.ReadFile(k.ConfigPath); err == nil && !strings.Contains(string(cfg), "enableServer: false") && k.Port > 0 {
		Eventually(k.t, 30*time.Second, 50*time.Millisecond, "kubelet API port", func() (bool, error) {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", k.Port), time.Second)
			if err != nil {
				return false, err
			}
			c.Close()
			return true, nil
		})
	}
}

// Running reports whether the kubelet started by Start is still running
// (the same process).
func (k *Kubelet) Running() bool {
	if k.cmd == nil {
		return false
	}
	select {
	case <-k.exited:
		return false
	default:
		return true
	}
}

// Stop stops the kubelet with SIGTERM (pods keep running, as upstream).
func (k *Kubelet) Stop() { k.signal(syscall.SIGTERM) }

// Kill kills the kubelet with SIGKILL.
func (k *Kubelet) Kill() { k.signal(syscall.SIGKILL) }

// Pid is the running kubelet's process ID (0 when it is not running).
func (k *Kubelet) Pid() int {
	if k.cmd == nil || k.cmd.Process == nil {
		return 0
	}
	select {
	case <-k.exited:
		return 0
	default:
		return k.cmd.Process.Pid
	}
}

func (k *Kubelet) signal(sig syscall.Signal) {
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	select {
	case <-k.exited:
		return
	default:
	}
	k.cmd.Process.Signal(sig)
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		k.cmd.Process.Kill()
		<-k.exited
	}
}

// WriteManifest writes a manifest file into the manifest directory.
func (k *Kubelet) WriteManifest(name, content string) {
	k.t.Helper()
	tmp := filepath.Join(k.ManifestDir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(k.ManifestDir, name)); err != nil {
		k.t.Fatal(err)
	}
}

// RemoveManifest deletes a manifest file.
func (k *Kubelet) RemoveManifest(name string) {
	k.t.Helper()
	if err := os.Remove(filepath.Join(k.ManifestDir, name)); err != nil {
		k.t.Fatal(err)
	}
}

// Pods reads GET /pods from the read-only port.
func (k *Kubelet) Pods() ([]v1.Pod, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", k.ReadOnlyPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /pods: %d %s", resp.StatusCode, body)
	}
	var list v1.PodList
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// StaticPodName is the name the kubelet gives a static pod.
func (k *Kubelet) StaticPodName(name string) string { return name + "-" + k.NodeName }

// Pod returns the named static pod from /pods, or nil.
func (k *Kubelet) Pod(name string) (*v1.Pod, error) {
	pods, err := k.Pods()
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == k.StaticPodName(name) {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// WaitForPod waits until cond holds for the named static pod.
func (k *Kubelet) WaitForPod(name string, timeout time.Duration, what string, cond func(p *v1.Pod) bool) *v1.Pod {
	k.t.Helper()
	var got *v1.Pod
	Eventually(k.t, timeout, 100*time.Millisecond, fmt.Sprintf("pod %s: %s", name, what), func() (bool, error) {
		p, err := k.Pod(name)
		if err != nil || p == nil {
			return false, fmt.Errorf("pod not listed (err %v)", err)
		}
		got = p
		if !cond(p) {
			b, _ := json.Marshal(p.Status)
			return false, fmt.Errorf("status %s", b)
		}
		return true, nil
	})
	return got
}

// RemovePodsOfNode stops and removes every sandbox (and its containers)
// of static pods of nodeName, so tests leave the runtime clean.
func RemovePodsOfNode(t testing.TB, nodeName string) {
	rs, _ := NewCRIClient(t)
	ctx := Ctx(t)
	sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Logf("cleanup: list sandboxes: %v", err)
		return
	}
	for _, sb := range sbs.Items {
		if strings.HasSuffix(sb.GetLabels()["io.kubernetes.pod.name"], "-"+nodeName) {
			cs, _ := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb.Id}})
			for _, c := range cs.GetContainers() {
				StopAndRemoveContainer(rs, c.Id)
			}
			StopAndRemovePodSandbox(rs, sb.Id)
		}
	}
}

// PodSandboxes lists the sandboxes of a pod UID.
func PodSandboxes(t testing.TB, uid string) []*runtimeapi.PodSandbox {
	rs, _ := NewCRIClient(t)
	resp, err := rs.ListPodSandbox(Ctx(t), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Items
}

// PodContainers lists the containers of a pod UID.
func PodContainers(t testing.TB, uid string) []*runtimeapi.Container {
	rs, _ := NewCRIClient(t)
	resp, err := rs.ListContainers(Ctx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Containers
}

// ExitCode reports whether the kubelet exited (waiting up to 10 s) and its code.
func (k *Kubelet) ExitCode() (int, bool) {
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		return 0, false
	}
	if k.exitErr == nil {
		return 0, true
	}
	if ee, ok := k.exitErr.(*exec.ExitError); ok {
		return ee.ExitCode(), true
	}
	return -1, true
}
