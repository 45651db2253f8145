//go:build reliability

package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// apiserverDown is how long the apiserver stays away.
const apiserverDown = 60 * time.Second

// TestAPIServerOutage takes the apiserver of a control plane of its own
// (neither the shared one nor the suite's) away for a minute while the kubelet runs pods, one
// of which finishes during the outage. No container may restart or change;
// once the apiserver is back, every status must be right in the API within
// 10 s: the steady pods Running and Ready, the finished one Succeeded.
func TestAPIServerOutage(t *testing.T) {
	privateRuntime(t)
	inst, err := newInstance()
	if err != nil {
		t.Fatal(err)
	}
	cp := framework.StartControlPlane(t, inst)
	ns := cp.Namespace(t, ifw.UniqueName("rel-outage"))
	n := startNode(t, cp)
	pods := scale(5, 20)
	var specs []*v1.Pod
	for i := 0; i < pods; i++ {
		p := sleeper(n.NodeName, fmt.Sprintf("p%02d", i))
		if i%2 == 1 {
			withReadinessProbe(p)
		}
		specs = append(specs, p)
	}
	// Runs into the outage and finishes during it.
	finisher := sleeper(n.NodeName, "finisher")
	finisher.Spec.RestartPolicy = v1.RestartPolicyNever
	finisher.Spec.Containers[0].Command = []string{"sh", "-c", "sleep 30"}
	specs = append(specs, finisher)
	createPods(t, n.client, ns, specs)
	before := waitPods(t, n.client, ns, pods+1, 5*time.Minute, "Running and Ready", podReady)

	cp.KillAPIServer(t)
	down := time.Now()
	rs, _ := ifw.NewCRIClient(t)
	for time.Since(down) < apiserverDown {
		// The kubelet stays healthy and keeps the containers running.
		if err := n.healthz(); err != nil {
			t.Errorf("during the outage: %v", err)
		}
		if running := runningContainers(t, rs); running < pods {
			t.Errorf("during the outage only %d containers run, want at least %d", running, pods)
		}
		time.Sleep(5 * time.Second)
	}
	back := cp.Restart(t)
	var converged time.Duration
	var after []v1.Pod
	ifw.Eventually(t, 3*time.Minute, 100*time.Millisecond, "pod statuses right again", func() (bool, error) {
		list, err := cp.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var wrong []string
		for i := range list.Items {
			p := &list.Items[i]
			switch {
			case p.Name == "finisher":
				if p.Status.Phase != v1.PodSucceeded {
					wrong = append(wrong, "finisher "+string(p.Status.Phase))
				}
			case !podReady(p):
				wrong = append(wrong, p.Name+" not Ready")
			}
		}
		if len(wrong) > 0 {
			return false, fmt.Errorf("%v", wrong)
		}
		converged, after = time.Since(back), list.Items
		return true, nil
	})
	var nodeBack time.Duration
	ifw.Eventually(t, 3*time.Minute, 100*time.Millisecond, "node Ready", func() (bool, error) {
		nd, err := cp.Client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nodeBack = time.Since(back)
		return nodeReady(nd), fmt.Errorf("conditions %v", nd.Status.Conditions)
	})
	steady := func(pods []v1.Pod) []v1.Pod {
		var out []v1.Pod
		for _, p := range pods {
			if p.Name != "finisher" {
				out = append(out, p)
			}
		}
		return out
	}
	restarts, changed := compareContainers(containersOf(steady(before)), containersOf(steady(after)))
	figure(t, "pods", float64(pods+1), "", "")
	figure(t, "apiserver_down", seconds(apiserverDown), "s", "")
	figure(t, "statuses_right_after_apiserver_back", seconds(converged), "s", "<= 10")
	figure(t, "node_ready_after_apiserver_back", seconds(nodeBack), "s", "")
	figure(t, "container_restarts", float64(restarts), "", "== 0")
	figure(t, "container_ids_changed", float64(changed), "", "== 0")
}

// healthz asks the kubelet's healthz port.
func (n *node) healthz() error {
	resp, err := n.admin.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HealthzPort))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}
