//go:build integration

package integration

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/node/imagegc"
	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// apiGet reads a path of the kubelet API (port 10250 equivalent; the test
// kubelets allow anonymous access and serve a self-signed certificate).
func apiGet(t *testing.T, k *framework.Kubelet, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d%s", k.Port, path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// exitedInstances lists the exited instances of a pod's container, newest first.
func exitedInstances(t *testing.T, uid, name string) []*runtimeapi.Container {
	var out []*runtimeapi.Container
	for _, c := range framework.PodContainers(t, uid) {
		if c.GetLabels()["io.kubernetes.container.name"] == name && c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt > out[j].CreatedAt })
	return out
}

// A crash-looping container keeps exactly --maximum-dead-containers-per-container
// dead instances (with their log files), while restartCount, lastState and
// the previous instance's log stay available.
func TestContainerGCKeepsMaxDeadPerContainer(t *testing.T) {
	logsDir := t.TempDir()
	k := framework.NewKubelet(t, "podLogsDir: "+logsDir)
	k.ExtraArgs = []string{"--maximum-dead-containers-per-container=2"}
	k.WriteManifest("crash.yaml", manifest("crash", "Always", "echo run-of-crash; exit 3"))
	k.Start()
	// Runs start at 0 s, at once, then after 10 s: the third exit leaves
	// three dead instances, one too many.
	p := k.WaitForPod("crash", 60*time.Second, "restarted twice and waiting", func(p *v1.Pod) bool {
		cs := containerState(p)
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil
	})
	uid := string(p.UID)
	var dead []*runtimeapi.Container
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "exactly 2 dead instances", func() (bool, error) {
		dead = exitedInstances(t, uid, "main")
		return len(dead) == 2, fmt.Errorf("%d dead instances", len(dead))
	})
	p, _ = k.Pod("crash")
	cs := containerState(p)
	if cs.RestartCount < 2 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Fatalf("status after pruning: restartCount %d lastState %+v", cs.RestartCount, cs.LastTerminationState)
	}
	if want := "containerd://" + dead[0].Id; cs.LastTerminationState.Terminated.ContainerID != want {
		t.Fatalf("lastState container %s, want the newest dead instance %s", cs.LastTerminationState.Terminated.ContainerID, want)
	}
	// Only the kept instances' log files remain: <restartCount>.log each.
	entries, err := os.ReadDir(filepath.Join(logsDir, fmt.Sprintf("default_%s_%s", p.Name, p.UID), "main"))
	if err != nil {
		t.Fatal(err)
	}
	var logs, want []string
	for _, e := range entries {
		logs = append(logs, e.Name())
	}
	for _, c := range dead {
		want = append(want, c.GetAnnotations()["io.kubernetes.container.restartCount"]+".log")
	}
	sort.Strings(logs)
	sort.Strings(want)
	if strings.Join(logs, ",") != strings.Join(want, ",") {
		t.Fatalf("log files %v, want those of the kept instances %v", logs, want)
	}
	code, body := apiGet(t, k, "/containerLogs/default/"+p.Name+"/main?previous=true")
	if code != http.StatusOK || !strings.Contains(body, "run-of-crash") {
		t.Fatalf("previous log: %d %q", code, body)
	}
}

// A deleted pod loses its containers, sandboxes, log directory and
// /var/log/containers links, also when it was deleted while the kubelet
// was down.
func TestContainerGCRemovesDeletedPods(t *testing.T) {
	logsDir := t.TempDir()
	k := framework.NewKubelet(t, "podLogsDir: "+logsDir)
	k.WriteManifest("done.yaml", manifest("done", "Never", "echo finished"))
	k.Start()
	p := k.WaitForPod("done", podTimeout, "succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	links, _ := filepath.Glob(filepath.Join("/var/log/containers", p.Name+"_default_main-*.log"))
	if len(links) != 1 {
		t.Fatalf("links %v, want the container's /var/log/containers link", links)
	}
	podLogDir := filepath.Join(logsDir, fmt.Sprintf("default_%s_%s", p.Name, p.UID))
	if _, err := os.Stat(podLogDir); err != nil {
		t.Fatal(err)
	}
	k.Stop()
	k.RemoveManifest("done.yaml")
	k.Start()
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "deleted pod gone from the runtime and disk", func() (bool, error) {
		if n := len(framework.PodContainers(t, string(p.UID))) + len(framework.PodSandboxes(t, string(p.UID))); n > 0 {
			return false, fmt.Errorf("%d containers and sandboxes left", n)
		}
		if _, err := os.Stat(podLogDir); !os.IsNotExist(err) {
			return false, fmt.Errorf("log dir: %v", err)
		}
		if _, err := os.Lstat(links[0]); !os.IsNotExist(err) {
			return false, fmt.Errorf("link: %v", err)
		}
		return true, nil
	})
}

// A fast-writing container's log rotates at containerLogMaxSize, keeping at
// most containerLogMaxFiles files (the older rotated ones gzipped), and
// /containerLogs serves the current file.
func TestContainerLogRotation(t *testing.T) {
	logsDir := t.TempDir()
	k := framework.NewKubelet(t, "podLogsDir: "+logsDir, "containerLogMaxSize: 1Ki", "containerLogMaxFiles: 3", "containerLogMonitorInterval: 3s")
	k.WriteManifest("chatty.yaml", manifest("chatty", "Always", "i=0; while true; do echo line-$i; i=$((i+1)); usleep 20000; done"))
	k.Start()
	p := k.WaitForPod("chatty", podTimeout, "running", running)
	dir := filepath.Join(logsDir, fmt.Sprintf("default_%s_%s", p.Name, p.UID), "main")
	var files []string
	sawGz := false
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !(sawGz && len(files) == 3) {
		entries, _ := os.ReadDir(dir)
		files = files[:0]
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				continue // a compression in progress
			}
			files = append(files, e.Name())
			sawGz = sawGz || strings.HasSuffix(e.Name(), ".gz")
		}
		if len(files) > 3 {
			t.Fatalf("%d log files %v, want at most containerLogMaxFiles=3", len(files), files)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sawGz || len(files) != 3 {
		t.Fatalf("log files %v: want the current log, one rotated and one gzipped", files)
	}
	sort.Strings(files)
	if files[0] != "0.log" || !strings.HasPrefix(files[1], "0.log.") || !strings.HasSuffix(files[1], ".gz") || strings.HasSuffix(files[2], ".gz") {
		t.Fatalf("log files %v", files)
	}
	// The endpoint reads the current file: its lines are consecutive and
	// newer than what was rotated away.
	code, body := apiGet(t, k, "/containerLogs/default/"+p.Name+"/main")
	lines := strings.Fields(body)
	if code != http.StatusOK || len(lines) == 0 {
		t.Fatalf("containerLogs: %d %q", code, body)
	}
	first, err1 := strconv.Atoi(strings.TrimPrefix(lines[0], "line-"))
	last, err2 := strconv.Atoi(strings.TrimPrefix(lines[len(lines)-1], "line-"))
	if err1 != nil || err2 != nil || last-first != len(lines)-1 || first == 0 {
		t.Fatalf("containerLogs lines %s .. %s (%d lines): want a consecutive tail after a rotation", lines[0], lines[len(lines)-1], len(lines))
	}
}

type eventLog struct{ reasons []string }

func (e *eventLog) Eventf(_ runtime.Object, _, reason, _ string, _ ...any) {
	e.reasons = append(e.reasons, reason)
}

// With thresholds that always ask for space, image GC removes the unused
// image and keeps the one a container uses and the sandbox image.
func TestImageGCRemovesUnusedImages(t *testing.T) {
	rs, is := framework.NewCRIClient(t)
	ctx := framework.Ctx(t)
	framework.PullImage(t, is, framework.PullTestImage)
	// A container of busybox keeps it in use (running or not).
	sbCfg := framework.PodSandboxConfig(t, "imagegc")
	sb := framework.RunPodSandbox(t, rs, sbCfg)
	created, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: sbCfg, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "user"}, Image: &runtimeapi.ImageSpec{Image: framework.BusyboxImage},
		Command: []string{"sleep", "3600"}, LogPath: "user.log",
	}})
	if err != nil {
		t.Fatal(err)
	}
	framework.CleanupContainer(t, rs, created.ContainerId)
	ev := &eventLog{}
	m, err := imagegc.New(imagegc.Config{Images: is, Runtime: rs, Clock: clock.RealClock{}, Recorder: ev, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "imagegc"},
		Policy: imagegc.Policy{HighThresholdPercent: 0, LowThresholdPercent: 0}})
	if err != nil {
		t.Fatal(err)
	}
	// Usage 0% is still at the high threshold 0%: free everything possible.
	err = m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "Failed to garbage collect required amount of images") {
		t.Fatalf("GarbageCollect: %v, want the not-enough-freed error", err)
	}
	if len(ev.reasons) != 1 || ev.reasons[0] != imagegc.FreeDiskSpaceFailed {
		t.Fatalf("events %v", ev.reasons)
	}
	present := func(ref string) bool {
		st, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatal(err)
		}
		return st.Image != nil
	}
	if present(framework.PullTestImage) {
		t.Fatalf("unused %s not collected", framework.PullTestImage)
	}
	if !present(framework.BusyboxImage) || !present("registry.k8s.io/pause:3.10") {
		t.Fatal("the in-use image or the sandbox image was collected")
	}
	// The eviction manager's call frees nothing more now.
	if freed, err := m.DeleteUnusedImages(ctx); err != nil || freed != 0 {
		t.Fatalf("DeleteUnusedImages: %d, %v", freed, err)
	}
}
