//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// podCountsManifest is a static pod whose container ignores SIGTERM (sleep
// as PID 1), so it stays terminating for its whole grace period.
func podCountsManifest(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 8
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, framework.BusyboxImage)
}

// scrapeFamilies GETs a Prometheus text endpoint and parses it.
func scrapeFamilies(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(string(body)))
}

// expectSeries checks the named series of the families (others must be 0
// for working_pods, which upstream writes in full).
func expectSeries(mfs map[string]*dto.MetricFamily, want map[string]map[string]float64) error {
	for family, series := range want {
		mf, ok := mfs[family]
		if !ok {
			return fmt.Errorf("no %s", family)
		}
		got := framework.SeriesValues(mf)
		if family == "kubelet_working_pods" && len(got) != 15 {
			return fmt.Errorf("%s has %d series, want upstream's 15: %v", family, len(got), got)
		}
		for key, v := range got {
			if w := series[key]; v != w {
				return fmt.Errorf("%s{%s} = %v, want %v (all: %v)", family, key, v, w, got)
			}
		}
		for key := range series {
			if _, ok := got[key]; !ok {
				return fmt.Errorf("%s has no series {%s}: %v", family, key, got)
			}
		}
	}
	return nil
}

// TestPodCountMetrics runs two static pods on the real runtime and reads
// upstream's housekeeping families on /metrics: kubelet_desired_pods,
// kubelet_active_pods, kubelet_working_pods and
// kubelet_restarted_pods_total. Then one manifest is removed and put back
// while its pod is still terminating: the same UID comes back, the pod
// workers let the old pod finish, and housekeeping starts it again (new
// sandbox, same UID) and counts it in kubelet_restarted_pods_total.
func TestPodCountMetrics(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("a.yaml", podCountsManifest("a"))
	k.WriteManifest("b.yaml", podCountsManifest("b"))
	k.Start()
	k.WaitForPod("a", podTimeout, "running", running)
	b := k.WaitForPod("b", podTimeout, "running", running)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", k.ReadOnlyPort)
	waitSeries := func(what string, want map[string]map[string]float64) {
		t.Helper()
		framework.Eventually(t, 60*time.Second, 200*time.Millisecond, what, func() (bool, error) {
			mfs, err := scrapeFamilies(metricsURL)
			if err != nil {
				return false, err
			}
			if err := expectSeries(mfs, want); err != nil {
				return false, err
			}
			return true, nil
		})
	}
	both := map[string]map[string]float64{
		"kubelet_desired_pods":         {"static=": 0, "static=true": 2},
		"kubelet_active_pods":          {"static=": 0, "static=true": 2},
		"kubelet_working_pods":         {"config=desired,lifecycle=sync,static=true": 2},
		"kubelet_restarted_pods_total": {"static=": 0, "static=true": 0},
	}
	waitSeries("two static pods counted", both)

	sandboxes := framework.PodSandboxes(t, string(b.UID))
	if len(sandboxes) != 1 {
		t.Fatalf("pod b has %d sandboxes, want 1", len(sandboxes))
	}
	oldSandbox := sandboxes[0].Id
	k.RemoveManifest("b.yaml")
	// While b stops (8 s grace), it is a worker no source wants.
	waitSeries("b terminating as an orphan", map[string]map[string]float64{
		"kubelet_desired_pods": {"static=": 0, "static=true": 1},
		"kubelet_active_pods":  {"static=": 0, "static=true": 1},
		"kubelet_working_pods": {"config=desired,lifecycle=sync,static=true": 1, "config=orphan,lifecycle=terminating,static=true": 1},
	})
	k.WriteManifest("b.yaml", podCountsManifest("b"))
	restarted := map[string]map[string]float64{}
	for f, s := range both {
		restarted[f] = s
	}
	restarted["kubelet_restarted_pods_total"] = map[string]float64{"static=": 0, "static=true": 1}
	waitSeries("b restarted", restarted)
	again := k.WaitForPod("b", podTimeout, "running again", func(p *v1.Pod) bool {
		if !running(p) {
			return false
		}
		for _, sb := range framework.PodSandboxes(t, string(p.UID)) {
			if sb.Id != oldSandbox && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				return true
			}
		}
		return false
	})
	if again.UID != b.UID {
		t.Fatalf("pod b came back with UID %s, want the same %s", again.UID, b.UID)
	}
}
