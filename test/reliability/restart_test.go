//go:build reliability

package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// statusResync is how often a kubelet's status writer re-sends every
// status (10 s, ours and upstream's): a status generated wrong would reach
// the API within it.
const statusResync = 10 * time.Second

// noSyncMetricWait stands in for the pod worker metric where a kubelet
// lacks it: the longest jittered resync of the default syncFrequency (1m).
const noSyncMetricWait = 90 * time.Second

// TestKubeletRestart kills the kubelet with SIGKILL while it runs pods bound
// to it (half with a readiness probe) and two static pods, and starts it
// again. Watching every pod event in the API from before the kill to after
// the restarted kubelet synced every pod once and ran every readiness probe
// again (plus a status resync period): no pod is ever shown not Ready, no
// container restarts or changes.
func TestKubeletRestart(t *testing.T) {
	cp := controlPlane(t)
	ns := cp.Namespace(t, ifw.UniqueName("rel-restart"))
	n := startNode(t, cp)
	pods := scale(10, 50)
	var specs []*v1.Pod
	probed := map[string]bool{}
	for i := 0; i < pods; i++ {
		p := sleeper(n.NodeName, fmt.Sprintf("p%02d", i))
		if i%2 == 1 {
			withReadinessProbe(p)
			probed[p.Name] = true
		}
		specs = append(specs, p)
	}
	// Static pods (their mirror pods in ns), one with a readiness probe.
	for i, name := range []string{"static-plain", "static-probed"} {
		p := sleeper(n.NodeName, name)
		p.Namespace, p.Spec.NodeName = ns, ""
		if i == 1 {
			withReadinessProbe(p)
			probed[n.StaticPodName(name)] = true
		}
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		data, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		n.WriteManifest(name+".yaml", string(data))
	}
	createPods(t, n.client, ns, specs)
	total := pods + 2
	before := waitPods(t, n.client, ns, total, 5*time.Minute, "Running and Ready", podReady)
	list, err := n.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := watchReady(t, n.client, ns, list.ResourceVersion)
	nw := watchNode(t, n.client, n.NodeName)

	n.Kill()
	killed := time.Now()
	n.Start()
	healthy := time.Since(killed)
	// The upstream kubelet does not count a static pod's first sync in the
	// metric (its readiness probe still shows it synced).
	syncs := total
	if kubeletName() == "upstream" {
		syncs = pods
	}
	synced, probesRan := n.awaitFirstFullSync(t, syncs, probed, killed)
	// A wrong status would be written at once, or at the latest at the
	// writer's next resync.
	time.Sleep(statusResync)

	events, notReady, first := w.result()
	after := waitPods(t, n.client, ns, total, time.Minute, "still there", func(*v1.Pod) bool { return true })
	restarts, changed := compareContainers(containersOf(before), containersOf(after))
	figure(t, "pods", float64(total), "", "")
	figure(t, "healthy_after_restart", seconds(healthy), "s", "")
	figure(t, "all_pods_synced_after_restart", seconds(synced), "s", "")
	figure(t, "readiness_probes_ran_after_restart", seconds(probesRan), "s", "")
	figure(t, "watch_events", float64(events), "", "")
	if len(notReady) > 0 {
		t.Logf("pods shown not Ready: %s; first: %s", strings.Join(notReady, " "), first)
	}
	figure(t, "pods_ever_not_ready", float64(len(notReady)), "", "== 0")
	figure(t, "container_restarts", float64(restarts), "", "== 0")
	figure(t, "container_ids_changed", float64(changed), "", "== 0")
	figure(t, "node_not_ready_events", float64(nw.result()), "", "")
}

// awaitFirstFullSync waits until the restarted kubelet has synced every
// pod once (kubelet_pod_worker_duration_seconds{operation_type="create"},
// which both kubelets record for a pod's first sync) and run each
// readiness probe of the pods in probed (prober_probe_total), and returns
// how long after since each took.
func (n *node) awaitFirstFullSync(t *testing.T, pods int, probed map[string]bool, since time.Time) (synced, probesRan time.Duration) {
	t.Helper()
	ifw.Eventually(t, 3*time.Minute, 200*time.Millisecond, "every pod synced once after the restart", func() (bool, error) {
		fams, err := n.scrape("/metrics")
		if err != nil {
			return false, err
		}
		if fams["kubelet_pod_worker_duration_seconds"] == nil && time.Since(since) > noSyncMetricWait {
			// A kubelet without the metric (an older build of ours): every
			// pod has surely been synced once by a resync.
			t.Logf("no kubelet_pod_worker_duration_seconds: waited %v (1.5 syncFrequency) instead", noSyncMetricWait)
			synced = time.Since(since)
			return true, nil
		}
		got := sample(fams, "kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "create"})
		if got < float64(pods) {
			return false, fmt.Errorf("%v of %d pods synced", got, pods)
		}
		synced = time.Since(since)
		return true, nil
	})
	ifw.Eventually(t, 3*time.Minute, 200*time.Millisecond, "every readiness probe ran after the restart", func() (bool, error) {
		fams, err := n.scrape("/metrics/probes")
		if err != nil {
			return false, err
		}
		var missing []string
		for name := range probed {
			if sample(fams, "prober_probe_total", map[string]string{"probe_type": "Readiness", "pod": name}) < 1 {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return false, fmt.Errorf("not probed yet: %v", missing)
		}
		probesRan = time.Since(since)
		return true, nil
	})
	return synced, probesRan
}
