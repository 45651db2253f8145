//go:build reliability

package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// TestNamespaceDeletion deletes a namespace whose pods all mount projected
// service account tokens (the default kube-api-access volume) and measures
// how long until the namespace is gone: the kubelet must stop the pods,
// tear their volumes down and let the API delete them. Ours must be done
// within 30 s; the upstream kubelet is given 10 minutes (on this machine its
// TearDown hits "device or resource busy" and backs off).
func TestNamespaceDeletion(t *testing.T) {
	cp := controlPlane(t)
	ns := cp.Namespace(t, ifw.UniqueName("rel-nsdel"))
	n := startNode(t, cp)
	pods := scale(10, 30)
	var specs []*v1.Pod
	for i := 0; i < pods; i++ {
		p := sleeper(n.NodeName, fmt.Sprintf("p%02d", i))
		// The namespace controller checks again after about half the longest
		// grace period of the pods still there; the containers exit on
		// SIGTERM at once whatever it is.
		grace := int64(5)
		p.Spec.TerminationGracePeriodSeconds = &grace
		specs = append(specs, p)
	}
	createPods(t, n.client, ns, specs)
	running := waitPods(t, n.client, ns, pods, 5*time.Minute, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	for _, p := range running {
		if !hasProjectedToken(&p) {
			t.Fatalf("pod %s has no projected service account token volume: %+v", p.Name, p.Spec.Volumes)
		}
	}

	limit := 2 * time.Minute
	if kubeletName() == "upstream" {
		limit = 10 * time.Minute
	}
	start := time.Now()
	if err := cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var podsGone, nsGone time.Duration
	deadline := start.Add(limit)
	for nsGone == 0 && time.Now().Before(deadline) {
		if podsGone == 0 {
			list, err := cp.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			if err == nil && len(list.Items) == 0 {
				podsGone = time.Since(start)
			}
		}
		_, err := cp.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			nsGone = time.Since(start)
			if podsGone == 0 {
				podsGone = nsGone
			}
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	figure(t, "pods", float64(pods), "", "")
	if nsGone == 0 {
		// Still there: reported as "more than the time waited".
		t.Logf("namespace %s still there after %v", ns, limit)
		figure(t, "namespace_gone_after_delete", seconds(limit), "s+", "<= 30")
		return
	}
	figure(t, "pods_gone_after_delete", seconds(podsGone), "s", "")
	figure(t, "namespace_gone_after_delete", seconds(nsGone), "s", "<= 30")
}

func hasProjectedToken(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}
