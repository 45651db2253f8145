//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// TestCRIReady checks what hack/setup-node.sh promises, through the CRI only:
// the runtime and its network are ready and the local images are there.
func TestCRIReady(t *testing.T) {
	rs, is := framework.NewCRIClient(t)
	ctx := framework.Ctx(t)

	v, err := rs.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeApiVersion != "v1" {
		t.Errorf("runtime API version %q, want v1", v.RuntimeApiVersion)
	}
	st, err := rs.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		i := slices.IndexFunc(st.Status.GetConditions(), func(c *runtimeapi.RuntimeCondition) bool { return c.Type == want })
		if i < 0 || !st.Status.Conditions[i].Status {
			t.Errorf("runtime condition %s not true: %v", want, st.Status.GetConditions())
		}
	}
	for _, img := range []string{framework.PauseImage, framework.BusyboxImage, "docker.io/library/busybox:latest"} {
		resp, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img}})
		if err != nil {
			t.Fatalf("ImageStatus %s: %v", img, err)
		}
		if resp.Image == nil || !slices.Contains(resp.Image.RepoTags, img) {
			t.Errorf("image %s not present (status %v); run hack/setup-node.sh", img, resp.Image)
		}
	}
}

// TestCRIPodLifecycle pulls busybox from the loopback registry, runs a pod
// on the CNI bridge with an httpd container, fetches a page from it by pod
// IP, then stops and removes everything. It logs how long each step took.
func TestCRIPodLifecycle(t *testing.T) {
	rs, is := framework.NewCRIClient(t)
	ctx := framework.Ctx(t)
	timed := func(step string, f func()) {
		t.Helper()
		start := time.Now()
		f()
		t.Logf("timing: %-18s %v", step, time.Since(start).Round(time.Millisecond))
	}

	var imageRef string
	framework.RemoveImageIfPresent(t, is, framework.PullTestImage)
	timed("PullImage", func() { imageRef = framework.PullImage(t, is, framework.PullTestImage) })
	img, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: framework.PullTestImage}})
	if err != nil || img.Image == nil {
		t.Fatalf("ImageStatus after pull: %v, %v", img, err)
	}
	if !slices.Contains(img.Image.RepoTags, framework.PullTestImage) || img.Image.Id != imageRef {
		t.Errorf("pulled image: tags %v id %s, pull returned %s", img.Image.RepoTags, img.Image.Id, imageRef)
	}

	cfg := framework.PodSandboxConfig(t, framework.UniqueName("criready"))
	var podID string
	timed("RunPodSandbox", func() { podID = framework.RunPodSandbox(t, rs, cfg) })
	pst, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatal(err)
	}
	if pst.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox state %v, want READY", pst.Status.State)
	}
	podIP := pst.Status.GetNetwork().GetIp()
	if ip := net.ParseIP(podIP); ip == nil || !strings.HasPrefix(podIP, framework.PodSubnetPrefix) {
		t.Fatalf("pod IP %q, want one in 10.88.0.0/16 from the CNI bridge", podIP)
	}
	t.Logf("pod %s has IP %s", podID[:12], podIP)

	ccfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "httpd"},
		Image:    &runtimeapi.ImageSpec{Image: imageRef},
		Command:  []string{"httpd", "-f", "-p", "8080", "-h", "/etc"},
		LogPath:  "httpd.log",
	}
	var ctrID string
	timed("CreateContainer", func() {
		resp, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: podID, Config: ccfg, SandboxConfig: cfg,
		})
		if err != nil {
			t.Fatalf("CreateContainer: %v", err)
		}
		ctrID = resp.ContainerId
	})
	framework.CleanupContainer(t, rs, ctrID)
	timed("StartContainer", func() {
		if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctrID}); err != nil {
			t.Fatalf("StartContainer: %v", err)
		}
	})
	cst, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrID})
	if err != nil {
		t.Fatal(err)
	}
	if cst.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container state %v (reason %q, message %q), want RUNNING",
			cst.Status.State, cst.Status.Reason, cst.Status.Message)
	}

	// The image's /etc/passwd, served by the container, fetched by pod IP.
	url := fmt.Sprintf("http://%s/passwd", net.JoinHostPort(podIP, "8080"))
	var body string
	timed("first HTTP answer", func() {
		framework.Eventually(t, 20*time.Second, 50*time.Millisecond, "GET "+url, func() (bool, error) {
			b, err := httpGet(ctx, url, 2*time.Second)
			body = b
			return err == nil, err
		})
	})
	if !strings.Contains(body, "nobody:x:65534:65534") {
		t.Errorf("GET %s = %q, want the image's /etc/passwd", url, body)
	}

	exec, err := rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctrID, Cmd: []string{"hostname"}, Timeout: 10})
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if got := strings.TrimSpace(string(exec.Stdout)); exec.ExitCode != 0 || got != cfg.Hostname {
		t.Errorf("exec hostname: exit %d stdout %q, want 0 %q", exec.ExitCode, got, cfg.Hostname)
	}

	timed("StopContainer", func() {
		if _, err := rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 5}); err != nil {
			t.Fatalf("StopContainer: %v", err)
		}
	})
	cst, err = rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrID})
	if err != nil || cst.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("after stop: status %v, err %v; want EXITED", cst.GetStatus().GetState(), err)
	}
	timed("RemoveContainer", func() {
		if _, err := rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctrID}); err != nil {
			t.Fatalf("RemoveContainer: %v", err)
		}
	})
	timed("StopPodSandbox", func() {
		if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
			t.Fatalf("StopPodSandbox: %v", err)
		}
	})
	timed("RemovePodSandbox", func() {
		if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
			t.Fatalf("RemovePodSandbox: %v", err)
		}
	})
	list, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{Id: podID},
	})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("sandbox still listed after removal: %v, %v", list.GetItems(), err)
	}
	if _, err := httpGet(ctx, url, 300*time.Millisecond); err == nil {
		t.Errorf("GET %s still answers after the pod was removed", url)
	}
}

// directClient never uses an HTTP proxy: traffic goes to pod IPs only.
var directClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

func httpGet(ctx context.Context, url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := directClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("status %s", resp.Status)
	}
	return string(b), nil
}
