//go:build integration

package integration

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// execIn runs a command in the pod's running container through the CRI.
func execIn(t *testing.T, p *v1.Pod, cmd ...string) {
	t.Helper()
	rs, _ := framework.NewCRIClient(t)
	id := strings.TrimPrefix(containerState(p).ContainerID, "containerd://")
	resp, err := rs.ExecSync(framework.Ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec %v: %v (exit %d, %s)", cmd, err, resp.GetExitCode(), resp.GetStderr())
	}
}

// Readiness follows an HTTP probe; a failing exec liveness probe restarts
// the container with upstream's Killing message.
func TestProbes(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("probed.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: probed
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "mkdir -p /www; touch /tmp/healthy; exec httpd -f -p 8080 -h /www"]
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {command: ["cat", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("probed", podTimeout, "running but not ready", func(p *v1.Pod) bool { return running(p) && !podReady(p) })
	// A negative check: after several failed probes it is still not ready.
	time.Sleep(3 * time.Second)
	if p, _ = k.Pod("probed"); podReady(p) || containerState(p).Ready {
		t.Fatal("ready although /ready answers 404")
	}
	execIn(t, p, "sh", "-c", "echo ok > /www/ready")
	p = k.WaitForPod("probed", 20*time.Second, "ready once /ready answers", podReady)
	if !containerState(p).Ready {
		t.Fatal("pod Ready but container not ready")
	}

	execIn(t, p, "rm", "/tmp/healthy")
	p = k.WaitForPod("probed", 30*time.Second, "restarted by the liveness probe", func(p *v1.Pod) bool {
		return containerState(p).RestartCount >= 1 && running(p)
	})
	log, _ := os.ReadFile(k.LogPath)
	if !strings.Contains(string(log), "Container main failed liveness probe, will be restarted") {
		t.Fatal("no Killing event for the liveness failure")
	}
	checkProbeMetrics(t, k, p)
}

// checkProbeMetrics reads /metrics/probes (read-only port) after the pod's
// probes ran: upstream's families with its labels and label values, the
// failed readiness probes (before /ready existed) and liveness probes
// (after /tmp/healthy went) counted apart from the successful ones.
func checkProbeMetrics(t *testing.T, k *framework.Kubelet, p *v1.Pod) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics/probes", k.ReadOnlyPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics/probes does not parse: %v", err)
	}
	total, ok := families["prober_probe_total"]
	if !ok || total.GetHelp() != "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result." {
		t.Fatalf("prober_probe_total missing or with another help: %v", total)
	}
	counts := map[string]float64{}
	for _, m := range total.GetMetric() {
		l := labels(m.GetLabel())
		if l["pod"] != p.Name || l["namespace"] != p.Namespace || l["pod_uid"] != string(p.UID) || l["container"] != "main" {
			continue
		}
		counts[l["probe_type"]+"/"+l["result"]] += m.GetCounter().GetValue()
	}
	for key, atLeast := range map[string]float64{"Readiness/failed": 3, "Readiness/successful": 1, "Liveness/successful": 1, "Liveness/failed": 2} {
		if counts[key] < atLeast {
			t.Errorf("prober_probe_total %s = %v, want at least %v (all: %v)", key, counts[key], atLeast, counts)
		}
	}
	durations, ok := families["prober_probe_duration_seconds"]
	if !ok {
		t.Fatal("no prober_probe_duration_seconds")
	}
	samples := map[string]uint64{}
	for _, m := range durations.GetMetric() {
		l := labels(m.GetLabel())
		if l["pod"] == p.Name && l["namespace"] == p.Namespace && l["container"] == "main" {
			samples[l["probe_type"]] += m.GetHistogram().GetSampleCount()
			var bounds []float64
			for _, b := range m.GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					bounds = append(bounds, b.GetUpperBound())
				}
			}
			if !reflect.DeepEqual(bounds, prometheus.DefBuckets) {
				t.Errorf("buckets %v, want upstream's %v", bounds, prometheus.DefBuckets)
			}
		}
	}
	if samples["Readiness"] == 0 || samples["Liveness"] == 0 {
		t.Errorf("probe duration samples %v: want readiness and liveness probes observed", samples)
	}
	if _, ok := families["process_start_time_seconds"]; !ok {
		t.Error("no process_start_time_seconds beside the probe metrics")
	}
}

func labels(pairs []*dto.LabelPair) map[string]string {
	out := map[string]string{}
	for _, l := range pairs {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
