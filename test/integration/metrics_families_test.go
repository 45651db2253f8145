//go:build integration && upstream

package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// familiesPod runs a CPU-limited busy loop (CFS throttling families), a
// sleeper and a readiness probe (prober families).
const familiesPod = `apiVersion: v1
kind: Pod
metadata:
  name: families
  namespace: default
spec:
  containers:
  - name: spin
    image: docker.io/library/busybox:1.36
    command: ["sh", "-c", "while true; do :; done"]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
  - name: sleeper
    image: docker.io/library/busybox:1.36
    command: ["sleep", "100000"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`

var familyEndpoints = []string{"/metrics", "/metrics/resource", "/metrics/probes", "/metrics/cadvisor"}

// TestMetricFamiliesMatchUpstream runs the upstream v1.36 kubelet
// (UPSTREAM_KUBELET, default _output/bin/kubelet-upstream) and then ours
// on the same runtime with the same static pod, scrapes the four metrics
// endpoints of each and compares the families: every family of ours must
// exist upstream with the same type and label names; every upstream family
// we lack must be named in docs/metrics.md. The diff is written to
// _output/metrics-families.md for that document. Each endpoint is its own
// subtest (/metrics/probes needs the prober metrics of the "wiring" branch).
func TestMetricFamiliesMatchUpstream(t *testing.T) {
	upstreamBin := os.Getenv("UPSTREAM_KUBELET")
	if upstreamBin == "" {
		upstreamBin = filepath.Join(framework.RepoRoot(), "_output", "bin", "kubelet-upstream")
	}
	if _, err := os.Stat(upstreamBin); err != nil {
		t.Fatalf("upstream kubelet: %v (build it with hack/build-cluster-tools.sh kubelet-upstream)", err)
	}
	up := scrapeKubelet(t, upstreamBin)
	ours := scrapeKubelet(t, "")
	doc, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	for _, ep := range familyEndpoints {
		t.Run(strings.TrimPrefix(ep, "/"), func(t *testing.T) {
			report.WriteString(diffFamilies(t, ep, up[ep], ours[ep], string(doc)))
			lintNoWorse(t, ep, up[ep], ours[ep])
		})
	}
	out := filepath.Join(framework.RepoRoot(), "_output", "metrics-families.md")
	if err := os.WriteFile(out, []byte(report.String()), 0o644); err == nil {
		t.Logf("family diff written to %s", out)
	}
}

type scraped struct {
	raw      []byte
	families map[string]*dto.MetricFamily
}

// scrapeKubelet starts a kubelet (bin "" is ours) with the families pod,
// waits for the pod's containers to show on /metrics/cadvisor and a probe
// to have run, scrapes the endpoints from the read-only port and stops it.
func scrapeKubelet(t *testing.T, bin string) map[string]scraped {
	k := framework.NewKubelet(t, "cgroupDriver: cgroupfs")
	k.Binary = bin
	if bin != "" {
		// The upstream kubelet wants cgroupRoot in every hierarchy
		// mounted, the named systemd one too.
		named := filepath.Join("/sys/fs/cgroup/systemd", k.CgroupRoot)
		if _, err := os.Stat("/sys/fs/cgroup/systemd"); err == nil {
			if err := os.MkdirAll(named, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { removeCgroupTree(named) })
		}
	}
	k.WriteManifest("families.yaml", familiesPod)
	k.Start()
	defer func() {
		k.Stop()
		framework.RemovePodsOfNode(t, k.NodeName)
		unmountUnder(k.RootDir)
	}()
	k.WaitForPod("families", 2*time.Minute, "ready", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				return true
			}
		}
		return false
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", k.ReadOnlyPort)
	out := map[string]scraped{}
	// cAdvisor finds new cgroups on its housekeeping: wait until the
	// containers (labelled or not) and CFS throttling show.
	framework.Eventually(t, 90*time.Second, time.Second, "containers on /metrics/cadvisor", func() (bool, error) {
		s, err := scrape(base + "/metrics/cadvisor")
		if err != nil {
			return false, err
		}
		if _, ok := s.families["container_cpu_cfs_throttled_periods_total"]; !ok {
			return false, fmt.Errorf("no container_cpu_cfs_throttled_periods_total yet")
		}
		return true, nil
	})
	// PLEG's series (kubelet_running_containers) appear with the first
	// relist that sees the pod: wait for it so that neither kubelet is
	// caught between its start and that relist.
	framework.Eventually(t, 30*time.Second, 200*time.Millisecond, "a relist that sees the pod", func() (bool, error) {
		s, err := scrape(base + "/metrics")
		if err != nil {
			return false, err
		}
		f, ok := s.families["kubelet_running_pods"]
		if !ok || len(f.GetMetric()) == 0 || f.GetMetric()[0].GetGauge().GetValue() < 1 {
			return false, fmt.Errorf("kubelet_running_pods not 1 yet")
		}
		return true, nil
	})
	// Housekeeping's pod counts (kubelet_desired_pods, kubelet_active_pods,
	// kubelet_working_pods, kubelet_restarted_pods_total) appear with its
	// first pass once every source has been seen: wait for it too.
	framework.Eventually(t, 30*time.Second, 200*time.Millisecond, "a housekeeping pass that counts the pod", func() (bool, error) {
		s, err := scrape(base + "/metrics")
		if err != nil {
			return false, err
		}
		f, ok := s.families["kubelet_desired_pods"]
		if !ok {
			return false, fmt.Errorf("no kubelet_desired_pods yet")
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() >= 1 {
				return true, nil
			}
		}
		return false, fmt.Errorf("kubelet_desired_pods does not count the pod yet")
	})
	for _, ep := range familyEndpoints {
		s, err := scrape(base + ep)
		if err != nil {
			t.Fatalf("%s: %v", ep, err)
		}
		out[ep] = s
	}
	return out
}

func scrape(url string) (scraped, error) {
	resp, err := http.Get(url)
	if err != nil {
		return scraped{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return scraped{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return scraped{}, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return scraped{}, fmt.Errorf("%s: %w", url, err)
	}
	return scraped{raw: body, families: mfs}, nil
}

// labelSet is the sorted union of a family's label names.
func labelSet(mf *dto.MetricFamily) string {
	seen := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			seen[l.GetName()] = true
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// eventFamilies are upstream v1.36 families (type and label names, from
// pkg/kubelet/metrics) whose first series comes with an event: a CRI error,
// an eviction, an image collected. Either kubelet may show them in one
// scrape and not the other.
var eventFamilies = map[string]string{
	"kubelet_runtime_operations_errors_total": "COUNTER {operation_type}",
	"kubelet_evictions":                       "COUNTER {eviction_signal}",
	"kubelet_eviction_stats_age_seconds":      "HISTOGRAM {eviction_signal}",
	"kubelet_image_garbage_collected_total":   "COUNTER {reason}",
}

// diffFamilies fails on families of ours that upstream lacks or exposes
// with another type or label names, and on upstream families we lack that
// docs/metrics.md does not name; it returns the diff as Markdown.
func diffFamilies(t *testing.T, ep string, up, ours scraped, doc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", ep)
	var missing, extra []string
	for name, mf := range ours.families {
		u, ok := up.families[name]
		if !ok {
			if want, ok := eventFamilies[name]; ok {
				// A family whose series come with an event: compare with
				// upstream's definition instead.
				if got := mf.GetType().String() + " {" + labelSet(mf) + "}"; got != want {
					t.Errorf("%s %s: %s, upstream defines %s", ep, name, got, want)
				}
				continue
			}
			extra = append(extra, name)
			continue
		}
		if u.GetType() != mf.GetType() {
			t.Errorf("%s %s: type %s, upstream %s", ep, name, mf.GetType(), u.GetType())
		}
		if got, want := labelSet(mf), labelSet(u); got != want {
			t.Errorf("%s %s: labels {%s}, upstream {%s}", ep, name, got, want)
		}
	}
	for name := range up.families {
		if _, ok := ours.families[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, name := range extra {
		t.Errorf("%s: family %s is ours only (upstream has none)", ep, name)
	}
	fmt.Fprintf(&b, "Families: upstream %d, ours %d, same name, type and labels %d.\n\n", len(up.families), len(ours.families), len(ours.families)-len(extra))
	if len(missing) > 0 {
		b.WriteString("Upstream only:\n\n")
		for _, name := range missing {
			fmt.Fprintf(&b, "- `%s`\n", name)
			if !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("%s: upstream family %s is missing here and not named in docs/metrics.md", ep, name)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// lintNoWorse runs promlint on both expositions: ours may show only the
// problems upstream's own names have (renaming them would break
// dashboards).
func lintNoWorse(t *testing.T, ep string, up, ours scraped) {
	known := map[string]bool{}
	ups, err := promlint.New(strings.NewReader(string(up.raw))).Lint()
	if err != nil {
		t.Fatalf("%s: promlint upstream: %v", ep, err)
	}
	for _, p := range ups {
		known[p.Metric+": "+p.Text] = true
	}
	problems, err := promlint.New(strings.NewReader(string(ours.raw))).Lint()
	if err != nil {
		t.Fatalf("%s: promlint: %v", ep, err)
	}
	for _, p := range problems {
		if !known[p.Metric+": "+p.Text] {
			t.Errorf("%s: promlint: %s: %s (upstream does not have this problem)", ep, p.Metric, p.Text)
		}
	}
}

// removeCgroupTree removes a cgroup directory and its children, deepest first.
func removeCgroupTree(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i])
	}
}

// unmountUnder lazily unmounts what is mounted at or below dir (the
// upstream kubelet bind-mounts its root directory onto itself).
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mps []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mps = append(mps, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mps)))
	for _, mp := range mps {
		unix.Unmount(mp, unix.MNT_DETACH)
	}
}
