//go:build reliability

package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// churnParallel is how many pods are created and deleted at a time.
const churnParallel = 5

// TestPodChurn creates and deletes pods (an in-memory emptyDir, the
// projected service account token) cycle after cycle, then checks that
// nothing is left behind once the kubelet settled: no sandbox, container,
// network namespace, pod cgroup, mount or pod directory, and the kubelet's
// resident memory back within 10 % of where it was after a warm-up.
func TestPodChurn(t *testing.T) {
	cp := controlPlane(t)
	ns := cp.Namespace(t, ifw.UniqueName("rel-churn"))
	n := startNode(t, cp)
	warmup, cycles := scale(10, 50), scale(40, 1000)
	rs, _ := ifw.NewCRIClient(t)
	c := &churn{t: t, n: n, ns: ns, rs: rs}

	c.run(0, warmup)
	if _, err := c.settle(); err != nil {
		t.Fatalf("after the warm-up: %v", err)
	}
	rss0 := n.rssKiB(t)
	n.saveHeapProfile(t, "after-warmup")
	start := time.Now()
	c.run(warmup, cycles)
	elapsed := time.Since(start)
	settled, err := c.settle()
	if err != nil {
		t.Logf("not settled: %v", err)
	}
	rss1 := n.rssKiB(t)
	n.saveHeapProfile(t, "after-cycles")
	leaks := c.leaks()
	figure(t, "cycles", float64(cycles), "", "")
	figure(t, "cycles_per_minute", float64(cycles)/elapsed.Minutes(), "", "")
	figure(t, "settled_after_last_delete", seconds(settled), "s", "")
	for _, k := range leakKinds {
		figure(t, "leaked_"+k, float64(len(leaks[k])), "", "== 0")
		if len(leaks[k]) > 0 {
			t.Logf("leaked %s: %v", k, firstN(leaks[k], 5))
		}
	}
	figure(t, "rss_after_warmup", float64(rss0)/1024, "MiB", "")
	figure(t, "rss_after_cycles", float64(rss1)/1024, "MiB", "")
	figure(t, "rss_growth", 100*float64(rss1-rss0)/float64(rss0), "%", "<= 10")
}

var leakKinds = []string{"sandboxes", "containers", "netns", "pod_cgroups", "mounts", "pod_dirs"}

type churn struct {
	t  *testing.T
	n  *node
	ns string
	rs runtimeapi.RuntimeServiceClient
	mu sync.Mutex
	// netns are the network namespaces the pods' sandboxes had.
	netns []string
}

// churnPod is a sleeper with an in-memory emptyDir (and, as every pod in a
// namespace with a service account, the projected token volume).
func churnPod(nodeName, name string) *v1.Pod {
	p := sleeper(nodeName, name)
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	return p
}

// run does cycles from first to first+count-1, churnParallel at a time: each
// creates a pod, waits until it runs, records its network namespace,
// deletes it and waits until it is gone from the API.
func (c *churn) run(first, count int) {
	jobs := make(chan int)
	errs := make(chan error, count)
	var wg sync.WaitGroup
	for w := 0; w < churnParallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := c.cycle(fmt.Sprintf("c%04d", i)); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := first; i < first+count; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		c.t.Fatal(err)
	}
}

func (c *churn) cycle(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pods := c.n.client.CoreV1().Pods(c.ns)
	p, err := pods.Create(ctx, churnPod(c.n.NodeName, name), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	for {
		cur, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		if cur.Status.Phase == v1.PodRunning {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("pod %s not running: %s", name, cur.Status.Phase)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ns := c.sandboxNetns(ctx, p.UID); ns != "" {
		c.mu.Lock()
		c.netns = append(c.netns, ns)
		c.mu.Unlock()
	}
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("pod %s not gone: %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sandboxNetns is the network namespace of the pod's sandbox, from the
// runtime's verbose sandbox status.
func (c *churn) sandboxNetns(ctx context.Context, uid types.UID) string {
	sbs, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(uid)}}})
	if err != nil || len(sbs.Items) == 0 {
		return ""
	}
	st, err := c.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sbs.Items[0].Id, Verbose: true})
	if err != nil {
		return ""
	}
	var info struct {
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct{ Type, Path string }
			}
		}
	}
	if json.Unmarshal([]byte(st.Info["info"]), &info) != nil {
		return ""
	}
	for _, n := range info.RuntimeSpec.Linux.Namespaces {
		if n.Type == "network" {
			return n.Path
		}
	}
	return ""
}

// leaks lists, by kind, what is left of the deleted pods.
func (c *churn) leaks() map[string][]string {
	out := map[string][]string{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if sbs, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
		for _, sb := range sbs.Items {
			out["sandboxes"] = append(out["sandboxes"], sb.Metadata.Name+" "+sb.State.String())
		}
	} else {
		out["sandboxes"] = append(out["sandboxes"], err.Error())
	}
	if cs, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err == nil {
		for _, ct := range cs.Containers {
			out["containers"] = append(out["containers"], ct.Metadata.Name+" "+ct.State.String())
		}
	} else {
		out["containers"] = append(out["containers"], err.Error())
	}
	c.mu.Lock()
	for _, p := range c.netns {
		if _, err := os.Stat(p); err == nil {
			out["netns"] = append(out["netns"], p)
		}
	}
	c.mu.Unlock()
	for _, ctrl := range []string{"memory", "cpu", "pids"} {
		root := filepath.Join("/sys/fs/cgroup", ctrl, c.n.CgroupRoot)
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "pod") {
				out["pod_cgroups"] = append(out["pod_cgroups"], path)
				return filepath.SkipDir
			}
			return nil
		})
	}
	out["mounts"] = mountsBelow(c.t, filepath.Join(c.n.RootDir, "pods"))
	if entries, err := os.ReadDir(filepath.Join(c.n.RootDir, "pods")); err == nil {
		for _, e := range entries {
			out["pod_dirs"] = append(out["pod_dirs"], e.Name())
		}
	}
	return out
}

// settle waits until nothing of the deleted pods is left (the upstream
// kubelet removes dead sandboxes in its minutely garbage collection), and
// returns how long that took.
func (c *churn) settle() (time.Duration, error) {
	limit := 2 * time.Minute
	if kubeletName() == "upstream" {
		limit = 5 * time.Minute
	}
	start := time.Now()
	for {
		leaks := c.leaks()
		var left []string
		for _, k := range leakKinds {
			if len(leaks[k]) > 0 {
				left = append(left, fmt.Sprintf("%d %s", len(leaks[k]), k))
			}
		}
		if len(left) == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("after %v still %s", limit, strings.Join(left, ", "))
		}
		time.Sleep(time.Second)
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}
