package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
)

// flavor is one kubelet binary under test.
type flavor struct {
	Name   string // "ours" or "upstream"
	Binary string
	// ExtraConfig is appended to the KubeletConfiguration both share.
	ExtraConfig string
}

// extraConfig is what a kubelet needs to run standalone on this machine
// (cgroup v1, no systemd, no API server), and what keeps it from touching
// anything but its own pods. Both kubelets get the same:
//   - failCgroupV1: false: the machine only has cgroup v1;
//   - anonymous authentication, AlwaysAllow authorization: no API server to
//     ask (the defaults are webhook, which both refuse without one);
//   - cgroupsPerQOS: false, enforceNodeAllocatable: []: no kubepods
//     hierarchy, so neither creates cgroups nor "cleans up" orphaned pod
//     cgroups of anything else here.
const extraConfig = `failCgroupV1: false
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupsPerQOS: false
enforceNodeAllocatable: []
`

// kubelet is one running kubelet process with its own directories.
type kubelet struct {
	flavor      flavor
	NodeName    string
	Dir         string
	RootDir     string
	ManifestDir string
	LogsDir     string
	ConfigPath  string
	LogPath     string
	ReadOnly    int
	Healthz     int
	Port        int
	Verbosity   int
	Endpoint    string
	// ExtraArgs follow the common flags.
	ExtraArgs []string

	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	exitErr error
	client  *http.Client
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newKubelet prepares directories, ports and the configuration file.
func newKubelet(fl flavor, workDir, phase, endpoint string, verbosity int) (*kubelet, error) {
	node := fmt.Sprintf("bench-%s-%s", fl.Name, randHex(3))
	dir := filepath.Join(workDir, fl.Name+"-"+phase)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	k := &kubelet{
		flavor:      fl,
		NodeName:    node,
		Dir:         dir,
		RootDir:     filepath.Join(dir, "root"),
		ManifestDir: filepath.Join(dir, "manifests"),
		LogsDir:     filepath.Join(dir, "pod-logs"),
		ConfigPath:  filepath.Join(dir, "config.yaml"),
		LogPath:     filepath.Join(dir, "kubelet.log"),
		Verbosity:   verbosity,
		Endpoint:    endpoint,
		// Polling every 10 ms: keep one connection alive.
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
	}
	for _, d := range []string{k.RootDir, k.ManifestDir, k.LogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var err error
	for _, p := range []*int{&k.ReadOnly, &k.Healthz, &k.Port} {
		if *p, err = freePort(); err != nil {
			return nil, err
		}
	}
	// podLogsDir is private: both kubelets delete log directories of pods
	// they do not know under it, and /var/log/pods is shared with others.
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
fileCheckFrequency: 20s
address: 127.0.0.1
port: %d
readOnlyPort: %d
healthzBindAddress: 127.0.0.1
healthzPort: %d
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
failSwapOn: false
podLogsDir: %s
%s`, k.ManifestDir, k.Port, k.ReadOnly, k.Healthz, endpoint, k.LogsDir, fl.ExtraConfig)
	if err := os.WriteFile(k.ConfigPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *kubelet) args() []string {
	return append([]string{"--config", k.ConfigPath, "--root-dir", k.RootDir, "--hostname-override", k.NodeName,
		"--v", strconv.Itoa(k.Verbosity)}, k.ExtraArgs...)
}

// start starts the process (it does not wait for it to be healthy).
func (k *kubelet) start() error {
	logf, err := os.OpenFile(k.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	k.cmd = exec.Command(k.flavor.Binary, k.args()...)
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	// Should the benchmark die, the kubelet goes with it.
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	k.started = time.Now()
	if err := k.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", k.flavor.Binary, err)
	}
	k.exited = make(chan struct{})
	go func() {
		k.exitErr = k.cmd.Wait()
		logf.Close()
		close(k.exited)
	}()
	registerRunning(k)
	return nil
}

func (k *kubelet) alive() error {
	select {
	case <-k.exited:
		return fmt.Errorf("%s kubelet exited: %v; log %s:\n%s", k.flavor.Name, k.exitErr, k.LogPath, tailFile(k.LogPath, 30))
	default:
		return nil
	}
}

// waitHealthy waits until /healthz says ok and /pods answers.
func (k *kubelet) waitHealthy(timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		if err := k.alive(); err != nil {
			return 0, err
		}
		ok := false
		if resp, err := k.client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.Healthz)); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				_, err := k.pods()
				ok = err == nil
			}
		}
		if ok {
			return time.Since(k.started), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s kubelet not healthy after %v; log %s:\n%s", k.flavor.Name, timeout, k.LogPath, tailFile(k.LogPath, 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits (SIGKILL after 30 s), then unmounts what
// the kubelet left mounted under its directory (upstream bind-mounts its
// root directory onto itself to make it rshared, and leaves it so).
func (k *kubelet) stop() {
	defer unregisterRunning(k)
	defer unmountUnder(k.Dir)
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	select {
	case <-k.exited:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
}

// unmountUnder lazily unmounts every mount point at or below dir, deepest
// first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if p := f[4]; p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil {
			fmt.Fprintf(os.Stderr, "bench: unmount %s: %v\n", points[i], err)
		}
	}
}

func (k *kubelet) pods() ([]v1.Pod, error) {
	resp, err := k.client.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", k.ReadOnly))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /pods: %d %s", resp.StatusCode, b)
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// fullName is the name the kubelet gives the static pod from manifest name.
func (k *kubelet) fullName(name string) string { return name + "-" + k.NodeName }

func podManifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: sleep
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, image)
}

// writeManifest writes the file under a dot name (both kubelets skip
// those) and renames it into place, so the kubelet sees one complete file.
func (k *kubelet) writeManifest(name, image string) error {
	tmp := filepath.Join(k.ManifestDir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(podManifest(name, image)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(k.ManifestDir, name+".yaml"))
}

func (k *kubelet) removeManifest(name string) error {
	return os.Remove(filepath.Join(k.ManifestDir, name+".yaml"))
}

// procStatus reads the named fields (e.g. VmRSS) of /proc/<pid>/status, in
// kB, and the process's user+system CPU time.
type procSample struct {
	RSSkB, HWMkB int64
	// VmRSS split: anonymous memory (heap, stacks) and file pages (the
	// mapped binary's text and data).
	AnonkB, FilekB int64
	Threads        int64
	CPU            time.Duration
}

func (k *kubelet) sample() (procSample, error) {
	var s procSample
	pid := k.cmd.Process.Pid
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			s.RSSkB = v
		case "VmHWM:":
			s.HWMkB = v
		case "RssAnon:":
			s.AnonkB = v
		case "RssFile:":
			s.FilekB = v
		case "Threads:":
			s.Threads = v
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+2:]
	}
	fs := strings.Fields(rest)
	if len(fs) > 12 {
		ut, _ := strconv.ParseInt(fs[11], 10, 64)
		st, _ := strconv.ParseInt(fs[12], 10, 64)
		s.CPU = time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	return s, nil
}

func (k *kubelet) version() string {
	out, err := exec.Command(k.flavor.Binary, "--version").CombinedOutput()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The kubelets running now, so an interrupt can stop them.
var (
	runningMu sync.Mutex
	running   = map[*kubelet]bool{}
)

func registerRunning(k *kubelet) {
	runningMu.Lock()
	running[k] = true
	runningMu.Unlock()
}

func unregisterRunning(k *kubelet) {
	runningMu.Lock()
	delete(running, k)
	runningMu.Unlock()
}

func stopAllRunning() {
	runningMu.Lock()
	ks := make([]*kubelet, 0, len(running))
	for k := range running {
		ks = append(ks, k)
	}
	runningMu.Unlock()
	for _, k := range ks {
		k.stop()
	}
}

// pollUntil calls cond every interval until it returns true (returning the
// time it first did) or ctx ends.
func pollUntil(ctx context.Context, interval time.Duration, cond func() bool) (time.Time, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if cond() {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
}
