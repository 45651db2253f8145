//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// TestPodCountMetrics: on a cluster node with one API pod and one static
// pod (and its mirror pod), /metrics counts them as upstream's
// housekeeping does: kubelet_desired_pods and kubelet_active_pods by
// static ("" for the API pod, "true" for the static one; the mirror pod is
// not counted), kubelet_working_pods{config="desired",lifecycle="sync"}
// one each, kubelet_restarted_pods_total zero; once the API pod is
// deleted it leaves every count.
func TestPodCountMetrics(t *testing.T) {
	n := joinNode(t)
	n.WriteManifest("static.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: counted-static
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	n.Start()
	ns := namespace(t, n.client)
	if _, err := n.client.CoreV1().Pods(ns).Create(ctxT(t), podOn(n.NodeName, "counted"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "counted", "running", podRunning)
	waitPod(t, n.client, "default", n.StaticPodName("counted-static"), "mirror pod running", podRunning)

	admin := apiClient(t, filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", n.Port)
	expect := func(what string, want map[string]map[string]float64) {
		t.Helper()
		eventually(t, 60*time.Second, what, func() (bool, error) {
			resp, err := admin.Get(url)
			if err != nil {
				return false, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false, fmt.Errorf("GET /metrics = %d", resp.StatusCode)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := parser.TextToMetricFamilies(resp.Body)
			if err != nil {
				return false, err
			}
			for family, series := range want {
				mf, ok := mfs[family]
				if !ok {
					return false, fmt.Errorf("no %s", family)
				}
				got := ifw.SeriesValues(mf)
				if family == "kubelet_working_pods" && len(got) != 15 {
					return false, fmt.Errorf("%s has %d series, want upstream's 15", family, len(got))
				}
				for key, v := range got {
					if v != series[key] {
						return false, fmt.Errorf("%s{%s} = %v, want %v", family, key, v, series[key])
					}
				}
				for key := range series {
					if _, ok := got[key]; !ok {
						return false, fmt.Errorf("%s has no series {%s}", family, key)
					}
				}
			}
			return true, nil
		})
	}
	expect("an API pod and a static pod counted", map[string]map[string]float64{
		"kubelet_desired_pods": {"static=": 1, "static=true": 1},
		"kubelet_active_pods":  {"static=": 1, "static=true": 1},
		"kubelet_working_pods": {
			"config=desired,lifecycle=sync,static=":     1,
			"config=desired,lifecycle=sync,static=true": 1,
		},
		"kubelet_restarted_pods_total": {"static=": 0, "static=true": 0},
	})

	if err := n.client.CoreV1().Pods(ns).Delete(ctxT(t), "counted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the deleted API pod no longer counted", map[string]map[string]float64{
		"kubelet_desired_pods":         {"static=": 0, "static=true": 1},
		"kubelet_active_pods":          {"static=": 0, "static=true": 1},
		"kubelet_working_pods":         {"config=desired,lifecycle=sync,static=true": 1},
		"kubelet_restarted_pods_total": {"static=": 0, "static=true": 0},
	})
}
