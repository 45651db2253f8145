//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// apiClient is an HTTPS client for the kubelet API with the given client
// certificate (none when certFile is "").
func apiClient(t *testing.T, certFile, keyFile string) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	cfg := &tls.Config{RootCAs: pool}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestKubeletAPIAuthAndMetrics(t *testing.T) {
	n := joinNode(t)
	n.Start()
	base := fmt.Sprintf("https://127.0.0.1:%d", n.Port)

	// No credentials: 401.
	if code, body := get(t, apiClient(t, "", ""), base+"/pods"); code != http.StatusUnauthorized || body != "Unauthorized" {
		t.Fatalf("anonymous GET /pods = %d %q, want 401 Unauthorized", code, body)
	}
	// Another node's identity lacks nodes/proxy on this node: 403.
	other := framework.NodeCredentials(t, "e2e-api-other")
	code, body := get(t, apiClient(t, other.ClientCert, other.ClientKey), base+"/pods")
	if code != http.StatusForbidden || !strings.Contains(body, "user=system:node:e2e-api-other") || !strings.Contains(body, "resource=nodes") {
		t.Fatalf("GET /pods as another node = %d %q, want 403 naming the user and resource", code, body)
	}
	// A cluster admin: 200.
	admin := apiClient(t, filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	if code, body := get(t, admin, base+"/pods"); code != http.StatusOK || !strings.Contains(body, `"kind":"PodList"`) {
		t.Fatalf("admin GET /pods = %d %.200q", code, body)
	}
	if code, body := get(t, admin, base+"/configz"); code != http.StatusOK || !strings.Contains(body, `"kubeletconfig"`) {
		t.Fatalf("admin GET /configz = %d %.200q", code, body)
	}

	// /metrics parses as Prometheus text with the upstream families.
	code, body = get(t, admin, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for _, want := range []string{
		"kubelet_pleg_relist_duration_seconds", "kubelet_pleg_relist_interval_seconds", "kubelet_running_pods",
		"kubelet_running_containers", "kubelet_runtime_operations_duration_seconds", "kubelet_runtime_operations_total",
		"kubelet_pod_start_duration_seconds",
	} {
		if _, ok := families[want]; !ok {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// /metrics/probes counts the probes of an API pod with its identity.
	ns := namespace(t, n.client)
	pod := podOn(n.NodeName, "probed", "httpd", "-f", "-p", "8080")
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{
		ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1,
	}
	created, err := n.client.CoreV1().Pods(ns).Create(ctxT(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "probed", "ready", podRunning)
	code, body = get(t, admin, base+"/metrics/probes")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics/probes = %d", code)
	}
	parser = expfmt.NewTextParser(model.UTF8Validation)
	families, err = parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics/probes does not parse: %v", err)
	}
	var successes float64
	for _, m := range families["prober_probe_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["namespace"] == ns && l["pod"] == "probed" && l["pod_uid"] == string(created.UID) && l["container"] == "main" &&
			l["probe_type"] == "Readiness" && l["result"] == "successful" {
			successes += m.GetCounter().GetValue()
		}
	}
	if successes < 1 {
		t.Errorf("prober_probe_total has no successful readiness probe of %s/probed:\n%s", ns, body)
	}
	if len(families["prober_probe_duration_seconds"].GetMetric()) == 0 {
		t.Errorf("no prober_probe_duration_seconds series:\n%s", body)
	}

	// /metrics/cadvisor is served on the authenticated port (nodes/metrics).
	code, body = get(t, admin, base+"/metrics/cadvisor")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics/cadvisor = %d", code)
	}
	parser = expfmt.NewTextParser(model.UTF8Validation)
	families, err = parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics/cadvisor does not parse: %v", err)
	}
	for _, want := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "machine_cpu_cores"} {
		if _, ok := families[want]; !ok {
			t.Errorf("/metrics/cadvisor lacks %s", want)
		}
	}
}
