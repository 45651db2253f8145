//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

func resources(cpuReq, memReq, cpuLim, memLim string) v1.ResourceRequirements {
	return v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuReq), v1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(memLim)},
	}
}

// resizePatch is a pods/resize strategic merge patch of one container.
func resizePatch(container, cpuReq, memReq, cpuLim, memLim string) string {
	return fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"requests":{"cpu":%q,"memory":%q},"limits":{"cpu":%q,"memory":%q}}}]}}`,
		container, cpuReq, memReq, cpuLim, memLim)
}

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func containerStatusOf(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// resized reports whether the status shows container name running with
// want, with no resize pending or in progress for the pod's generation.
func resized(name string, want v1.ResourceRequirements) func(p *v1.Pod) bool {
	return func(p *v1.Pod) bool {
		cs := containerStatusOf(p, name)
		if cs == nil || cs.Resources == nil || cs.State.Running == nil || p.Status.ObservedGeneration != p.Generation {
			return false
		}
		if podCondition(p, v1.PodResizePending) != nil || podCondition(p, v1.PodResizeInProgress) != nil {
			return false
		}
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if !cs.Resources.Requests[r].Equal(want.Requests[r]) || !cs.Resources.Limits[r].Equal(want.Limits[r]) ||
				!cs.AllocatedResources[r].Equal(want.Requests[r]) {
				return false
			}
		}
		return true
	}
}

// cgroupOf is the cgroupfs path of a container of a pod on node n.
func cgroupOf(n *node, p *v1.Pod, containerID string) string {
	class := "burstable/"
	if p.Status.QOSClass == v1.PodQOSGuaranteed {
		class = ""
	}
	return fmt.Sprintf("%s/kubepods/%spod%s/%s", n.CgroupRoot, class, p.UID, strings.TrimPrefix(containerID, "containerd://"))
}

func cgroupValue(t *testing.T, controller, path, file string) string {
	t.Helper()
	v, err := ifw.CgroupFile(t, controller, path, file)
	if err != nil {
		t.Fatalf("read %s/%s: %v", path, file, err)
	}
	return v
}

// In-place resize through `kubectl patch --subresource resize` on our
// kubelet: applied without a restart (container and pod cgroups, the
// statuses' resources and allocatedResources); more CPU than the node has
// is Deferred with admission's message and reverting it clears it; a
// container whose resizePolicy says RestartContainer for memory restarts;
// a memory limit below the container's usage is refused (InProgress,
// reason Error); the allocation survives a kubelet restart
// (allocated_pods_state) without disturbing the pod.
func TestPodResizeInPlace(t *testing.T) {
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	p := podOn(n.NodeName, "resize", "sh", "-c", "head -c 40m /dev/zero > /dev/shm/ballast; exec sleep 3600")
	p.Spec.Containers[0].Name = "app"
	p.Spec.Containers[0].Resources = resources("100m", "64Mi", "200m", "128Mi")
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "restarts", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sleep", "3600"}, Resources: resources("50m", "32Mi", "100m", "64Mi"),
		ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}})
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, n.client, ns, "resize", "running", podRunning)
	appID := containerStatusOf(p, "app").ContainerID

	// Grow CPU and memory in place.
	want := resources("150m", "64Mi", "300m", "160Mi")
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "--type", "strategic", "-p", resizePatch("app", "150m", "64Mi", "300m", "160Mi"))
	p = waitPod(t, n.client, ns, "resize", "resized to 150m/300m 64Mi/160Mi", resized("app", want))
	if cs := containerStatusOf(p, "app"); cs.ContainerID != appID || cs.RestartCount != 0 {
		t.Fatalf("the container was restarted: %+v", cs)
	}
	cg := cgroupOf(n, p, appID)
	if q := cgroupValue(t, "cpu", cg, "cpu.cfs_quota_us"); q != "30000" {
		t.Errorf("container cpu.cfs_quota_us %s, want 30000", q)
	}
	if m := cgroupValue(t, "memory", cg, "memory.limit_in_bytes"); m != fmt.Sprint(160<<20) {
		t.Errorf("container memory.limit_in_bytes %s, want 160Mi", m)
	}
	pod := filepathDir(cg)
	if m := cgroupValue(t, "memory", pod, "memory.limit_in_bytes"); m != fmt.Sprint(224<<20) {
		t.Errorf("pod memory.limit_in_bytes %s, want 224Mi (160Mi + 64Mi)", m)
	}
	if s := cgroupValue(t, "cpu", pod, "cpu.shares"); s != "204" {
		t.Errorf("pod cpu.shares %s, want 204 (200m of requests)", s)
	}
	evs := podEvents(t, n, ns, "resize", "ResizeCompleted")
	if len(evs) == 0 || !strings.Contains(evs[0].Message, `"generation":2`) {
		t.Errorf("ResizeCompleted events %v", evs)
	}

	// More CPU than the node has free: Deferred, with admission's message
	// (the API server refuses more than the node's allocatable itself), and
	// allocated once another pod leaves.
	node, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := node.Status.Allocatable[v1.ResourceCPU]
	fillCPU := alloc.MilliValue() - 200 - 100 // leaves 100m free
	filler := podOn(n.NodeName, "filler")
	filler.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(fillCPU, resource.DecimalSI)}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "filler", "running", podRunning)
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("app", "500m", "64Mi", "500m", "160Mi"))
	p = waitPod(t, n.client, ns, "resize", "resize pending", func(p *v1.Pod) bool {
		c := podCondition(p, v1.PodResizePending)
		return c != nil && c.ObservedGeneration == p.Generation
	})
	c := podCondition(p, v1.PodResizePending)
	wantMsg := fmt.Sprintf("Node didn't have enough resource: cpu, requested: 550, used: %d, capacity: %d", fillCPU, alloc.MilliValue())
	if c.Reason != v1.PodReasonDeferred || c.Message != wantMsg {
		t.Errorf("PodResizePending %s %q, want Deferred %q", c.Reason, c.Message, wantMsg)
	}
	if cs := containerStatusOf(p, "app"); !cs.AllocatedResources[v1.ResourceCPU].Equal(resource.MustParse("150m")) {
		t.Errorf("allocatedResources moved for a deferred resize: %v", cs.AllocatedResources)
	}
	if len(podEvents(t, n, ns, "resize", "ResizeDeferred")) == 0 {
		t.Error("no ResizeDeferred event")
	}
	if err := n.client.CoreV1().Pods(ns).Delete(ctx, "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "resize", "deferred resize applied once the filler left", resized("app", resources("500m", "64Mi", "500m", "160Mi")))
	// Back to what it was; a resize that cannot fit and is reverted clears
	// its condition.
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("app", "150m", "64Mi", "300m", "160Mi"))
	waitPod(t, n.client, ns, "resize", "back to 150m", resized("app", want))
	hog := podOn(n.NodeName, "hog")
	hog.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(fillCPU, resource.DecimalSI)}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "hog", "running", podRunning)
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("app", "500m", "64Mi", "500m", "160Mi"))
	waitPod(t, n.client, ns, "resize", "resize pending again", func(p *v1.Pod) bool { return podCondition(p, v1.PodResizePending) != nil })
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("app", "150m", "64Mi", "300m", "160Mi"))
	waitPod(t, n.client, ns, "resize", "pending cleared by the revert", resized("app", want))

	// RestartContainer for memory: the container restarts with it.
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("restarts", "50m", "48Mi", "100m", "96Mi"))
	p = waitPod(t, n.client, ns, "resize", "restarts resized", resized("restarts", resources("50m", "48Mi", "100m", "96Mi")))
	if cs := containerStatusOf(p, "restarts"); cs.RestartCount != 1 {
		t.Errorf("restarts: restartCount %d, want 1", cs.RestartCount)
	}

	// Below what app uses (40Mi in /dev/shm): refused, the old limit stays.
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("app", "150m", "16Mi", "300m", "16Mi"))
	p = waitPod(t, n.client, ns, "resize", "resize error", func(p *v1.Pod) bool {
		c := podCondition(p, v1.PodResizeInProgress)
		return c != nil && c.Reason == v1.PodReasonError
	})
	if c := podCondition(p, v1.PodResizeInProgress); !strings.Contains(c.Message, "memory limit (16777216) below current usage") {
		t.Errorf("PodResizeInProgress message %q", c.Message)
	}
	if m := cgroupValue(t, "memory", cg, "memory.limit_in_bytes"); m != fmt.Sprint(160<<20) {
		t.Errorf("container memory.limit_in_bytes %s after a refused resize, want 160Mi", m)
	}
	if len(podEvents(t, n, ns, "resize", "ResizeError")) == 0 {
		t.Error("no ResizeError event")
	}
	kubectl(t, "-n", ns, "patch", "pod", "resize", "--subresource", "resize", "-p", resizePatch("app", "150m", "64Mi", "300m", "160Mi"))
	waitPod(t, n.client, ns, "resize", "back to 160Mi", resized("app", want))

	// A restarted kubelet keeps the allocation (it has it in its root
	// directory) and leaves the pod alone.
	if _, err := os.Stat(filepath.Join(n.RootDir, "allocated_pods_state")); err != nil {
		t.Errorf("allocation checkpoint: %v", err)
	}
	n.Stop()
	n.Start()
	p = waitPod(t, n.client, ns, "resize", "still resized after a kubelet restart", resized("app", want))
	if cs := containerStatusOf(p, "app"); cs.ContainerID != appID || cs.RestartCount != 0 {
		t.Errorf("the kubelet restart disturbed the container: %+v", cs)
	}
}

func filepathDir(p string) string { return p[:strings.LastIndex(p, "/")] }

// BenchmarkResizeApplied measures `pods/resize` patch → the new resources
// in status.containerStatuses[].resources (the kubelet's apply and status
// write, through the real API server and containerd). The bar is 1 s.
func BenchmarkResizeApplied(b *testing.B) {
	n := joinNode(b, "podLogsDir: "+b.TempDir())
	n.Start()
	ns := namespace(b, n.client)
	ctx := context.Background()
	p := podOn(n.NodeName, "bench", "sleep", "3600")
	p.Spec.Containers[0].Resources = resources("100m", "64Mi", "200m", "128Mi")
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitPodB(b, n.client, ns, "bench", podRunning)
	var worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu := fmt.Sprintf("%dm", 100+(i%2)*50)
		want := resources(cpu, "64Mi", "200m", "128Mi")
		start := time.Now()
		if _, err := n.client.CoreV1().Pods(ns).Patch(ctx, "bench", types.StrategicMergePatchType,
			[]byte(resizePatch("main", cpu, "64Mi", "200m", "128Mi")), metav1.PatchOptions{}, "resize"); err != nil {
			b.Fatal(err)
		}
		waitPodB(b, n.client, ns, "bench", resized("main", want))
		if d := time.Since(start); d > worst {
			worst = d
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	if worst > time.Second {
		b.Errorf("a resize took %v from the patch to the status, over the 1 s bar", worst)
	}
}

// waitPodB watches the pod until cond holds (30 s at most): the time is
// when the API server's watch delivers the status, not a poll's.
func waitPodB(b *testing.B, c kubernetes.Interface, ns, name string, cond func(*v1.Pod) bool) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if cond(p) {
		return
	}
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: p.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*v1.Pod); ok && cond(p) {
			return
		}
	}
	b.Fatalf("pod %s/%s: condition not met in 30s", ns, name)
}
