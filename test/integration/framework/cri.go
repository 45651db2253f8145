package framework

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What hack/setup-node.sh provides.
const (
	DefaultRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	// PauseImage is containerd's sandbox image (imported locally).
	PauseImage = "registry.k8s.io/pause:3.10"
	// BusyboxImage is imported locally (also tagged :latest).
	BusyboxImage = "docker.io/library/busybox:1.36"
	// RegistryAddr is the plain-HTTP registry on loopback.
	RegistryAddr = "localhost:5000"
	// RegistryBusyboxImage is busybox served by that registry, for real pulls.
	RegistryBusyboxImage = RegistryAddr + "/busybox:1.36"
	// PullTestImage is busybox with a config (so an image ID) of its own:
	// tests may remove it, which CRI does for every tag of that ID.
	PullTestImage = RegistryAddr + "/pulltest:1"
	// PodSubnetPrefix is the start of every pod IP on the CNI bridge (10.88.0.0/16).
	PodSubnetPrefix = "10.88."
)

// Containerd2Endpoint is the containerd 2.x that hack/setup-containerd2.sh
// starts beside Debian's 1.6; it has the CRI container event stream.
const Containerd2Endpoint = "unix:///run/containerd2/containerd.sock"

// CallTimeout bounds each CRI call made through the helpers here.
const CallTimeout = 2 * time.Minute

// ConnectTimeout bounds how long NewCRIClient waits for the runtime to answer.
var ConnectTimeout = 10 * time.Second

// RuntimeEndpoint is $CONTAINER_RUNTIME_ENDPOINT, or containerd's default socket.
func RuntimeEndpoint() string {
	if ep := os.Getenv("CONTAINER_RUNTIME_ENDPOINT"); ep != "" {
		return ep
	}
	return DefaultRuntimeEndpoint
}

// NewCRIClient connects to RuntimeEndpoint() and checks that the runtime
// answers; the test fails (never skips) when it does not. The connection is
// closed when the test ends.
func NewCRIClient(t testing.TB) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	ep := RuntimeEndpoint()
	if !strings.Contains(ep, "://") {
		ep = "unix://" + ep
	}
	conn, err := grpc.NewClient(ep,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		t.Fatalf("CRI endpoint %s: %v", ep, err)
	}
	t.Cleanup(func() { conn.Close() })
	rs, is := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	v, err := rs.Version(ctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("container runtime not reachable at %s: %v\n"+
			"start it with `bash hack/setup-node.sh` (as root) or point CONTAINER_RUNTIME_ENDPOINT at a CRI socket", ep, err)
	}
	t.Logf("CRI runtime %s %s (API %s) at %s", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion, ep)
	return rs, is
}

// Ctx returns a context bounded by CallTimeout that ends with the test.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	t.Cleanup(cancel)
	return ctx
}

// UniqueName returns prefix plus a random suffix, usable as a pod name or UID.
func UniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// PodSandboxConfig returns a minimal pod config on the CNI network with logs
// under a temporary directory of the test.
func PodSandboxConfig(t testing.TB, name string) *runtimeapi.PodSandboxConfig {
	t.Helper()
	uid := UniqueName("uid")
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: "integration"},
		Hostname:     name,
		LogDirectory: t.TempDir(),
		Labels:       map[string]string{"seed-kubelet.test/name": t.Name()},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD},
			},
		},
	}
}

// RunPodSandbox runs cfg and registers CleanupPodSandbox for it.
func RunPodSandbox(t testing.TB, rs runtimeapi.RuntimeServiceClient, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	resp, err := rs.RunPodSandbox(Ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", cfg.GetMetadata().GetName(), err)
	}
	CleanupPodSandbox(t, rs, resp.PodSandboxId)
	return resp.PodSandboxId
}

// PullImage pulls ref through the CRI and returns the image reference the
// runtime reports.
func PullImage(t testing.TB, is runtimeapi.ImageServiceClient, ref string) string {
	t.Helper()
	resp, err := is.PullImage(Ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("PullImage %s: %v", ref, err)
	}
	return resp.ImageRef
}

// RemoveImageIfPresent removes ref so a following pull really pulls.
func RemoveImageIfPresent(t testing.TB, is runtimeapi.ImageServiceClient, ref string) {
	t.Helper()
	st, err := is.ImageStatus(Ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("ImageStatus %s: %v", ref, err)
	}
	if st.Image == nil {
		return
	}
	if _, err := is.RemoveImage(Ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil && !IsNotFound(err) {
		t.Fatalf("RemoveImage %s: %v", ref, err)
	}
}

// CleanupPodSandbox stops and removes the sandbox (and so its containers)
// when the test ends; a sandbox already gone is fine.
func CleanupPodSandbox(t testing.TB, rs runtimeapi.RuntimeServiceClient, id string) {
	t.Helper()
	t.Cleanup(func() {
		if err := StopAndRemovePodSandbox(rs, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// CleanupContainer stops and removes the container when the test ends; a
// container already gone is fine.
func CleanupContainer(t testing.TB, rs runtimeapi.RuntimeServiceClient, id string) {
	t.Helper()
	t.Cleanup(func() {
		if err := StopAndRemoveContainer(rs, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// StopAndRemovePodSandbox stops then removes a sandbox, ignoring NotFound.
func StopAndRemovePodSandbox(rs runtimeapi.RuntimeServiceClient, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("StopPodSandbox %s: %w", id, err)
	}
	if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
	}
	return nil
}

// StopAndRemoveContainer stops (no grace period) then removes a container,
// ignoring NotFound.
func StopAndRemoveContainer(rs runtimeapi.RuntimeServiceClient, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	if _, err := rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("StopContainer %s: %w", id, err)
	}
	if _, err := rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("RemoveContainer %s: %w", id, err)
	}
	return nil
}

// IsNotFound reports whether err is a gRPC NotFound (what containerd
// answers for unknown sandboxes, containers and images).
func IsNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}

// Eventually calls cond every interval until it returns true or timeout
// passes, then fails the test with the last error.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		time.Sleep(interval)
	}
}

// PrivateContainerd starts a containerd of the test's own with
// hack/private-containerd.sh NAME (env adds its options, e.g.
// PRIVATE_CONTAINERD_SYSTEMD_BUS=...), stops it when the test ends, and
// returns its CRI endpoint and pid.
func PrivateContainerd(t testing.TB, name string, env ...string) (endpoint string, pid int) {
	t.Helper()
	script := filepath.Join(RepoRoot(), "hack", "private-containerd.sh")
	cmd := exec.Command("bash", script, name)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, name, "stop").CombinedOutput(); err != nil {
			t.Errorf("stop private containerd %s: %v\n%s", name, err, out)
		}
	})
	if err != nil {
		t.Fatalf("hack/private-containerd.sh %s: %v\n%s", name, err, stderr.String())
	}
	data, err := os.ReadFile(filepath.Join("/run/seed-kubelet", name+"-containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
		t.Fatalf("pid file of containerd %s: %v", name, err)
	}
	return strings.TrimSpace(string(out)), pid
}
