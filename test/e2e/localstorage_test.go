//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// localStorageCapacityIsolation (on by default): a pod that writes past
// its emptyDir sizeLimit, its container's ephemeral-storage limit or the
// sum of its containers' limits is Failed/Evicted with upstream's message
// and an Evicted event, from the stats the kubelet already collects; a pod
// within its limits stays.
func TestLocalStorageLimitsEvict(t *testing.T) {
	n := joinNode(t, "volumeStatsAggPeriod: 2s")
	n.Start()
	c := n.client
	ctx := ctxT(t)
	ns := namespace(t, c)
	limit := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(q)}}
	}
	sizeLimit := resource.MustParse("4Mi")
	fill := func(path string, mi int) string {
		return fmt.Sprintf("dd if=/dev/zero of=%s bs=1M count=%d && sleep 3600", path, mi)
	}

	emptyDir := podOn(n.NodeName, "emptydir", "sh", "-c", fill("/scratch/fill", 8))
	emptyDir.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &sizeLimit}}}}
	emptyDir.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}

	// A roomy sibling keeps the pod's total limit (24Mi) out of reach, so
	// the container's own limit is what is crossed.
	container := podOn(n.NodeName, "container", "sh", "-c", fill("/fill", 8))
	container.Spec.Containers[0].Resources = limit("4Mi")
	container.Spec.Containers = append(container.Spec.Containers, v1.Container{Name: "roomy", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sleep", "3600"}, Resources: limit("20Mi")})

	// Each container stays within its own 3Mi (the data is in a volume),
	// the pod does not stay within their 6Mi.
	pod := podOn(n.NodeName, "pod", "sh", "-c", fill("/scratch/fill", 8))
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	pod.Spec.Containers[0].Resources = limit("3Mi")
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "idle", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sleep", "3600"}, Resources: limit("3Mi")})

	within := podOn(n.NodeName, "within", "sh", "-c", fill("/scratch/fill", 1))
	within.Spec.Volumes = emptyDir.Spec.Volumes
	within.Spec.Containers[0].VolumeMounts = emptyDir.Spec.Containers[0].VolumeMounts
	within.Spec.Containers[0].Resources = limit("4Mi")

	want := map[string]string{
		"emptydir":  `Usage of EmptyDir volume "scratch" exceeds the limit "4Mi". `,
		"container": `Container main exceeded its local ephemeral storage limit "4Mi". `,
		"pod":       "Pod ephemeral local storage usage exceeds the total limit of containers 6Mi. ",
	}
	start := time.Now()
	for _, p := range []*v1.Pod{emptyDir, container, pod, within} {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, msg := range want {
		got := waitPod(t, c, ns, name, "evicted", evicted)
		t.Logf("%s evicted %v after creation: %s", name, time.Since(start).Round(time.Second), got.Status.Message)
		if got.Status.Message != msg {
			t.Errorf("%s: message %q, want %q", name, got.Status.Message, msg)
		}
		if hasCondition(got, v1.DisruptionTarget) {
			t.Errorf("%s: a DisruptionTarget condition, which upstream does not set for local storage evictions", name)
		}
		eventually(t, 30*time.Second, "an Evicted event for "+name, func() (bool, error) {
			evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=Evicted"})
			if err != nil || len(evs.Items) == 0 {
				return false, err
			}
			e := evs.Items[0]
			if e.Type != v1.EventTypeWarning || e.Message != msg {
				return false, fmt.Errorf("event %s %q", e.Type, e.Message)
			}
			return true, nil
		})
	}
	w, err := c.CoreV1().Pods(ns).Get(ctx, "within", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Status.Phase != v1.PodRunning {
		t.Errorf("the pod within its limits is %s (%s)", w.Status.Phase, w.Status.Message)
	}
	admin := apiClient(t, filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	// Counted once each pod is stopped (the status comes first, as upstream).
	eventually(t, 60*time.Second, "kubelet_evictions for each limit", func() (bool, error) {
		_, metrics := get(t, admin, fmt.Sprintf("https://127.0.0.1:%d/metrics", n.Port))
		for _, signal := range []string{"emptydirfs.limit", "ephemeralcontainerfs.limit", "ephemeralpodfs.limit"} {
			if !strings.Contains(metrics, `kubelet_evictions{eviction_signal="`+signal+`"} 1`) {
				return false, fmt.Errorf("no kubelet_evictions 1 for %s", signal)
			}
		}
		return true, nil
	})
}
