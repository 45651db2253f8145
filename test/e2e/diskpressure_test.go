//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// availableMi is statfs's available space of the filesystem holding path.
func availableMi(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize >> 20
}

// keepSharedImages re-imports the locally built busybox and pause images
// when a test's image GC removed them: nothing can pull them again here,
// and every later test needs them.
func keepSharedImages(t *testing.T, is runtimeapi.ImageServiceClient) {
	t.Cleanup(func() {
		ctx := context.Background()
		for ref, tar := range map[string]string{ifw.BusyboxImage: "busybox.tar", "registry.k8s.io/pause:3.10": "pause.tar"} {
			st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			if err == nil && st.GetImage() != nil {
				continue
			}
			t.Logf("%s was removed; importing it again", ref)
			addr := strings.TrimPrefix(ifw.RuntimeEndpoint(), "unix://")
			out, err := exec.Command("ctr", "--address", addr, "-n", "k8s.io", "images", "import",
				filepath.Join(framework.RepoRoot(), "_output", "images", tar)).CombinedOutput()
			if err != nil {
				t.Errorf("re-import %s: %v\n%s", ref, err, out)
			}
		}
	})
}

// TestDiskPressureCollectsImagesBeforeEviction sets nodefs.available's hard
// threshold writeMi/2 below what the kubelet's filesystem has now, then a
// pod fills an emptyDir with writeMi. The kubelet must first reclaim
// node-level resources — here the unused pulltest image goes — and only
// then, with the threshold still met, evict the pod that uses the disk,
// reporting DiskPressure on the Node meanwhile. The other pod writes
// smallMi to its own writable layer, more than the writer's container
// does: only the emptyDir's usage, counted through the pod's volume stats,
// ranks the writer first.
//
// The filesystem is the machine's, shared with whatever else runs on it:
// its free space drifted by up to 800Mi during a run, which once left the
// threshold unmet. writeMi/2 is therefore 1600Mi each way.
func TestDiskPressureCollectsImagesBeforeEviction(t *testing.T) {
	const writeMi, smallMi = 3200, 8
	_, is := ifw.NewCRIClient(t)
	keepSharedImages(t, is)
	ctx := ctxT(t)
	ifw.PullImage(t, is, ifw.PullTestImage)

	// The kubelet's root dir is a test temp dir.
	avail := availableMi(t, os.TempDir())
	threshold := avail - writeMi/2
	t.Logf("nodefs available now %dMi; hard threshold %dMi; writer %dMi", avail, threshold, writeMi)
	// Volumes are measured every 5-10s rather than 1-2min, so that the
	// ranking sees the emptyDir filled, not as it was when the pod started.
	n := joinNode(t, "nodeStatusUpdateFrequency: 2s", "imageMinimumGCAge: 1s", "volumeStatsAggPeriod: 5s",
		"evictionPressureTransitionPeriod: 10s", fmt.Sprintf("evictionHard:\n  nodefs.available: %dMi", threshold))
	n.Start()
	c := n.client
	eventually(t, 30*time.Second, "node Ready", func() (bool, error) {
		nd, err := c.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(nd), err
	})

	ns := namespace(t, c)
	small := podOn(n.NodeName, "small", "sh", "-c", fmt.Sprintf("dd if=/dev/zero of=/small bs=1M count=%d && sleep 3600", smallMi))
	if _, err := c.CoreV1().Pods(ns).Create(ctx, small, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, ns, "small", "running", podRunning)
	// The writer fills the emptyDir in two steps: first up to 600Mi short
	// of the threshold, then, after a pause longer than a volume
	// measurement (5-10s) plus an eviction check (10s) apart, the rest.
	// When the threshold is crossed the ranking thus sees the emptyDir
	// well filled, as it would on a node where pressure builds slowly, and
	// the runtime has sized the writer's writable layer. The echo gives
	// its container a log, so that its own usage is above its zero request.
	firstMi := writeMi/2 - 600
	writer := podOn(n.NodeName, "writer", "sh", "-c", fmt.Sprintf(
		"echo filling; dd if=/dev/zero of=/data/fill1 bs=1M count=%d && sleep 30 && dd if=/dev/zero of=/data/fill2 bs=1M count=%d && sleep 3600",
		firstMi, writeMi-firstMi))
	writer.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	writer.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, writer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Watch, in one loop, for the image to go and for the writer's eviction.
	var imageGoneAt, evictedAt time.Time
	var got *v1.Pod
	sawPressure := false
	eventually(t, 180*time.Second, "the writer evicted", func() (bool, error) {
		if imageGoneAt.IsZero() {
			st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ifw.PullTestImage}})
			if err == nil && st.GetImage() == nil {
				imageGoneAt = time.Now()
			}
		}
		if nd, err := c.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{}); err == nil {
			for _, cond := range nd.Status.Conditions {
				if cond.Type == v1.NodeDiskPressure && cond.Status == v1.ConditionTrue {
					sawPressure = true
				}
			}
		}
		p, err := c.CoreV1().Pods(ns).Get(ctx, "writer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !evicted(p) {
			return false, fmt.Errorf("writer: phase %s reason %q", p.Status.Phase, p.Status.Reason)
		}
		evictedAt, got = time.Now(), p
		return true, nil
	})
	// Stop the kubelet now: with the threshold still met it would go on
	// collecting every image no container uses any more.
	n.Stop()
	t.Logf("writer evicted: %s", got.Status.Message)
	if imageGoneAt.IsZero() || imageGoneAt.After(evictedAt) {
		t.Errorf("the unused image was not collected before the eviction (gone at %v, evicted at %v)", imageGoneAt, evictedAt)
	}
	if !strings.HasPrefix(got.Status.Message, "The node was low on resource: ephemeral-storage. ") {
		t.Errorf("eviction message %q", got.Status.Message)
	}
	// As upstream, the message names a container's own usage, its writable
	// layer and logs: the emptyDir is the pod's, not the container's.
	m := regexp.MustCompile(`Container main was using (\S+), request is 0, has larger consumption of ephemeral-storage\. `).FindStringSubmatch(got.Status.Message)
	if m == nil {
		t.Errorf("eviction message %q does not name container main's usage", got.Status.Message)
	} else if q, err := resource.ParseQuantity(m[1]); err != nil || q.Value() <= 0 || q.Value() >= smallMi<<20 {
		t.Errorf("container main's usage %q (%v): want its writable layer and logs only, not the %dMi emptyDir", m[1], err, writeMi)
	}
	if !sawPressure {
		t.Errorf("DiskPressure never seen True on the Node")
	}
	if sp, err := c.CoreV1().Pods(ns).Get(ctx, "small", metav1.GetOptions{}); err != nil || evicted(sp) {
		t.Errorf("the small pod was evicted (err %v); the writer's emptyDir uses more disk", err)
	}
}
