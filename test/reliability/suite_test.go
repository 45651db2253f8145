//go:build reliability

package reliability

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// Environment of a run (hack/reliability.sh sets it).
const (
	envFull       = "RELIABILITY_FULL"       // "1": the full figures
	envKubelet    = "RELIABILITY_KUBELET"    // "ours" (default) or "upstream"
	envContainerd = "RELIABILITY_CONTAINERD" // the private containerd's name (hack/private-containerd.sh)
	envOut        = "RELIABILITY_OUT"        // directory for figures.jsonl
	// envBinary runs this build of our kubelet instead of the working
	// tree's (for example an older commit, to show a regression).
	envBinary = "RELIABILITY_KUBELET_BINARY"
)

func full() bool { return os.Getenv(envFull) == "1" }

// scale is small in the suite's run and big in the full one.
func scale(small, big int) int {
	if full() {
		return big
	}
	return small
}

// kubeletName is "ours" or "upstream".
func kubeletName() string {
	if os.Getenv(envKubelet) == "upstream" {
		return "upstream"
	}
	return "ours"
}

// Figure is one measured value of a test, as figures.jsonl records it.
type Figure struct {
	Kubelet string  `json:"kubelet"`
	Full    bool    `json:"full"`
	Test    string  `json:"test"`
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit,omitempty"`
	// Bound is what the value must satisfy ("== 0", "<= 10"); empty for a
	// figure only reported.
	Bound string `json:"bound,omitempty"`
	OK    bool   `json:"ok"`
}

var figuresMu sync.Mutex

// figure records a value; when bound is set (e.g. "<= 10") the test fails
// unless the value satisfies it (for our kubelet: the upstream one's misses
// are reported only).
func figure(t *testing.T, name string, value float64, unit, bound string) {
	t.Helper()
	value = math.Round(value*1000) / 1000
	ok := true
	if bound != "" {
		var op string
		var limit float64
		if _, err := fmt.Sscanf(bound, "%s %g", &op, &limit); err != nil {
			t.Fatalf("figure %s: bad bound %q", name, bound)
		}
		switch op {
		case "==":
			ok = value == limit
		case "<=":
			ok = value <= limit
		case ">=":
			ok = value >= limit
		case "<":
			ok = value < limit
		default:
			t.Fatalf("figure %s: bad bound %q", name, bound)
		}
	}
	f := Figure{Kubelet: kubeletName(), Full: full(), Test: strings.TrimPrefix(t.Name(), "Test"), Name: name, Value: value, Unit: unit, Bound: bound, OK: ok}
	t.Logf("FIGURE kubelet=%s test=%s %s=%s%s bound=%q ok=%v", f.Kubelet, f.Test, name, strconv.FormatFloat(value, 'f', -1, 64), unit, bound, ok)
	if dir := os.Getenv(envOut); dir != "" {
		figuresMu.Lock()
		defer figuresMu.Unlock()
		line, _ := json.Marshal(f)
		fh, err := os.OpenFile(filepath.Join(dir, "figures.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("record figure: %v", err)
		} else {
			fh.Write(append(line, '\n'))
			fh.Close()
		}
	}
	switch {
	case ok:
	case kubeletName() == "ours":
		t.Errorf("%s = %v%s, want %s", name, value, unit, bound)
	default:
		// The bounds are ours: the upstream kubelet's figures are reported.
		t.Logf("%s kubelet: %s = %v%s misses %s", kubeletName(), name, value, unit, bound)
	}
}

// seconds rounds d to milliseconds, in seconds.
func seconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// privateRuntime fails the test unless it runs on a private containerd: a
// kubelet stops every pod it does not know, and these tests kill runtimes.
func privateRuntime(t *testing.T) string {
	t.Helper()
	ep := ifw.RuntimeEndpoint()
	name := os.Getenv(envContainerd)
	if name == "" || ep == ifw.DefaultRuntimeEndpoint || ep == ifw.Containerd2Endpoint ||
		ep != "unix:///run/seed-"+name+"/containerd.sock" {
		t.Fatalf("the reliability suite runs on a private containerd only: set %s=NAME and CONTAINER_RUNTIME_ENDPOINT=$(hack/private-containerd.sh NAME) (got %q, %q)", envContainerd, name, ep)
	}
	return ep
}

// node is a kubelet (ours or upstream) joined to a control plane.
type node struct {
	*ifw.Kubelet
	cluster *framework.Cluster
	client  kubernetes.Interface
	// admin reaches the kubelet's own HTTPS port as cluster-admin.
	admin *http.Client
}

// startNode starts a kubelet of the flavour under test on the private
// containerd, joined to cp, and waits until its Node is Ready. When the
// test ends the kubelet is stopped, every pod on the private runtime removed
// and whatever it left mounted below its directory unmounted.
func startNode(t *testing.T, cp *framework.Cluster, extraConfig ...string) *node {
	t.Helper()
	privateRuntime(t)
	logs := t.TempDir()
	// podLogsDir is private: a kubelet removes the log directories of pods it
	// does not know, and /var/log/pods is shared with everyone else's.
	extra := append([]string{"podLogsDir: " + logs}, extraConfig...)
	k := cp.JoinNode(t, ifw.UniqueName("rel"), extra...)
	switch {
	case kubeletName() == "upstream":
		k.Binary = framework.UpstreamKubelet(t)
		// Upstream's wants its cgroupRoot in every mounted hierarchy, the
		// named systemd one too.
		otherCgroupHierarchies(t, k.CgroupRoot)
	case os.Getenv(envBinary) != "":
		k.Binary = os.Getenv(envBinary)
	}
	n := &node{Kubelet: k, cluster: cp, client: cp.Client, admin: adminClient(t)}
	t.Cleanup(func() {
		k.Stop()
		keepLog(t, k.LogPath)
		cleanRuntime(t)
		unmountBelow(t, filepath.Dir(k.RootDir))
		unmountBelow(t, logs)
	})
	start := time.Now()
	k.Start()
	n.waitReady(t, 60*time.Second)
	t.Logf("%s kubelet on node %s Ready after %v", kubeletName(), k.NodeName, time.Since(start).Round(time.Millisecond))
	return n
}

// keepLog copies the kubelet's log to $RELIABILITY_OUT/logs/TEST-KUBELET.log.
func keepLog(t *testing.T, path string) {
	dir := os.Getenv(envOut)
	if dir == "" {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	name := strings.ReplaceAll(t.Name(), "/", "_") + "-" + kubeletName() + ".log"
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err == nil {
		os.WriteFile(filepath.Join(dir, "logs", name), data, 0o644)
	}
}

// saveHeapProfile keeps the kubelet's heap profile (after a GC) as
// $RELIABILITY_OUT/profiles/TEST-KUBELET-name.pb.gz, for `go tool pprof
// -base` between two of them when memory grows.
func (n *node) saveHeapProfile(t *testing.T, name string) {
	dir := os.Getenv(envOut)
	if dir == "" {
		return
	}
	resp, err := n.admin.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/heap?gc=1", n.Port))
	if err != nil {
		t.Logf("heap profile %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Logf("heap profile %s: %v %s", name, err, resp.Status)
		return
	}
	file := strings.ReplaceAll(t.Name(), "/", "_") + "-" + kubeletName() + "-" + name + ".pb.gz"
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err == nil {
		os.WriteFile(filepath.Join(dir, "profiles", file), data, 0o644)
	}
}

func (n *node) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	ifw.Eventually(t, timeout, 200*time.Millisecond, "node "+n.NodeName+" Ready", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(nd), fmt.Errorf("conditions %v", nd.Status.Conditions)
	})
}

func nodeReady(nd *v1.Node) bool {
	for _, c := range nd.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// adminClient reaches kubelets' HTTPS ports with the cluster-admin
// certificate (their serving certificates are signed by the cluster CA).
func adminClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
}

// scrape reads a Prometheus endpoint of the kubelet (/metrics,
// /metrics/probes).
func (n *node) scrape(path string) (map[string]*dto.MetricFamily, error) {
	resp, err := n.admin.Get(fmt.Sprintf("https://127.0.0.1:%d%s", n.Port, path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s %.200s", path, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// sample sums family name's samples whose labels include match: counter and
// gauge values, histogram and summary sample counts.
func sample(fams map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	var sum float64
	f := fams[name]
	if f == nil {
		return 0
	}
metrics:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if labels[k] != v {
				continue metrics
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Summary != nil:
			sum += float64(m.GetSummary().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// rssKiB is the kubelet process's resident set (VmRSS).
func (n *node) rssKiB(t *testing.T) int64 {
	t.Helper()
	return procStatusKiB(t, n.Pid(), "VmRSS:")
}

func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// sleeper is a pod bound to nodeName whose container sleeps and exits at
// once on SIGTERM (busybox sleep as PID 1 would ignore it and wait out the
// grace period).
func sleeper(nodeName, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"reliability": "true"}},
		Spec: v1.PodSpec{
			NodeName: nodeName,
			Containers: []v1.Container{{Name: "main", Image: ifw.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`}}},
		},
	}
}

// withReadinessProbe makes the pod serve TCP on 8080 and probes it.
func withReadinessProbe(p *v1.Pod) *v1.Pod {
	c := &p.Spec.Containers[0]
	c.Command = []string{"sh", "-c", `mkdir -p /tmp/www && echo ok >/tmp/www/index.html && httpd -p 8080 -h /tmp/www && trap "exit 0" TERM; sleep 3600 & wait`}
	c.ReadinessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
	return p
}

// podReady reports the pod's Ready condition.
func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitPods waits until the namespace holds want pods, every one satisfying
// cond, and returns them.
func waitPods(t *testing.T, c kubernetes.Interface, ns string, want int, timeout time.Duration, what string, cond func(*v1.Pod) bool) []v1.Pod {
	t.Helper()
	var pods []v1.Pod
	ifw.Eventually(t, timeout, 500*time.Millisecond, fmt.Sprintf("%d pods in %s %s", want, ns, what), func() (bool, error) {
		list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods = list.Items
		var bad []string
		for i := range pods {
			if !cond(&pods[i]) {
				bad = append(bad, pods[i].Name+" "+string(pods[i].Status.Phase))
			}
		}
		if len(pods) != want || len(bad) > 0 {
			sort.Strings(bad)
			if len(bad) > 5 {
				bad = append(bad[:5], "...")
			}
			return false, fmt.Errorf("%d pods, not yet: %v", len(pods), bad)
		}
		return true, nil
	})
	return pods
}

// createPods creates pods in ns, several at a time.
func createPods(t *testing.T, c kubernetes.Interface, ns string, pods []*v1.Pod) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	sem := make(chan struct{}, 8)
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func(p *v1.Pod) {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				errs <- fmt.Errorf("create pod %s: %w", p.Name, err)
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// containerIDs maps "pod/container" to its container ID and restart count.
type containerState struct {
	ID       string
	Restarts int32
}

func containersOf(pods []v1.Pod) map[string]containerState {
	out := map[string]containerState{}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			out[p.Name+"/"+cs.Name] = containerState{ID: cs.ContainerID, Restarts: cs.RestartCount}
		}
	}
	return out
}

// compareContainers counts the containers restarted (restart count
// increase) and the containers whose ID changed between two snapshots.
func compareContainers(before, after map[string]containerState) (restarts int, changed int) {
	for k, b := range before {
		a, ok := after[k]
		if !ok {
			changed++
			continue
		}
		if a.ID != b.ID {
			changed++
		}
		restarts += int(a.Restarts - b.Restarts)
	}
	return restarts, changed
}

// readyWatch watches every pod of a namespace (every event, through a
// watch that resumes from the last resource version) and records each
// one's Ready condition as the API server showed it.
type readyWatch struct {
	mu sync.Mutex
	// events counts the watch events seen.
	events int
	// notReady counts, per pod, the events that showed it not Ready.
	notReady map[string]int
	// first is the first event that showed a pod not Ready, for the log.
	first string
	stop  context.CancelFunc
	done  chan struct{}
}

// watchReady starts a readyWatch on ns from rv (the resource version of a
// list in which every pod was Ready).
func watchReady(t *testing.T, c kubernetes.Interface, ns, rv string) *readyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &readyWatch{notReady: map[string]int{}, stop: cancel, done: make(chan struct{})}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				p, ok := ev.Object.(*v1.Pod)
				if !ok {
					continue
				}
				w.mu.Lock()
				w.events++
				if ev.Type != watch.Deleted && !podReady(p) {
					w.notReady[p.Name]++
					if w.first == "" {
						w.first = fmt.Sprintf("%s %s at %s: phase %s conditions %v", ev.Type, p.Name, time.Now().Format(time.RFC3339Nano), p.Status.Phase, p.Status.Conditions)
					}
				}
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *readyWatch) close() {
	w.stop()
	<-w.done
}

// result stops the watch and returns the events seen, the pods ever seen
// not Ready and the first such event.
func (w *readyWatch) result() (events int, notReady []string, first string) {
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.notReady {
		notReady = append(notReady, name)
	}
	sort.Strings(notReady)
	return w.events, notReady, w.first
}

// nodeWatch counts the events that showed the node not Ready.
type nodeWatch struct {
	mu       sync.Mutex
	notReady int
	stop     context.CancelFunc
	done     chan struct{}
}

func watchNode(t *testing.T, c kubernetes.Interface, name string) *nodeWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	nd, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &nodeWatch{stop: cancel, done: make(chan struct{})}
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, nd.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return c.CoreV1().Nodes().Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				if nd, ok := ev.Object.(*v1.Node); ok && !nodeReady(nd) {
					w.mu.Lock()
					w.notReady++
					w.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

func (w *nodeWatch) result() int {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notReady
}

// cleanRuntime removes every container and sandbox on the (private)
// runtime.
func cleanRuntime(t *testing.T) {
	rs, _ := ifw.NewCRIClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Logf("cleanup: list containers: %v", err)
		return
	}
	for _, c := range cs.Containers {
		ifw.StopAndRemoveContainer(rs, c.Id)
	}
	sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Logf("cleanup: list sandboxes: %v", err)
		return
	}
	for _, sb := range sbs.Items {
		if err := ifw.StopAndRemovePodSandbox(rs, sb.Id); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
}

// mountsBelow lists the mount points at or below dir, deepest first.
func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(infos))
	for _, m := range infos {
		out = append(out, m.Mountpoint)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// unmountBelow unmounts whatever is mounted at or below dir (the upstream
// kubelet bind-mounts its root directory onto itself; pods' volumes), so
// the test's directories can be removed.
func unmountBelow(t *testing.T, dir string) {
	for _, m := range mountsBelow(t, dir) {
		if err := syscall.Unmount(m, 0); err != nil {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
}

// runningContainers counts the running containers on the private runtime.
func runningContainers(t *testing.T, rs runtimeapi.RuntimeServiceClient) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return len(resp.Containers)
}

// otherCgroupHierarchies creates path in the cgroup hierarchies mounted
// beside the controllers' (the named "systemd" one, the "unified" one) and
// removes it, with what a kubelet made below it, when the test ends.
func otherCgroupHierarchies(t *testing.T, path string) {
	t.Helper()
	for _, h := range []string{"systemd", "unified"} {
		dir := filepath.Join("/sys/fs/cgroup", h, path)
		if _, err := os.Stat(filepath.Dir(dir)); err != nil {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("create cgroup %s: %v", dir, err)
		}
		t.Cleanup(func() { removeCgroupTree(t, dir) })
	}
}

// removeCgroupTree removes a cgroup directory and those below it, deepest
// first (a cgroup's files go with its directory).
func removeCgroupTree(t *testing.T, dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !os.IsNotExist(err) {
			t.Logf("remove cgroup %s: %v", dirs[i], err)
		}
	}
}
