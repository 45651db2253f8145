//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// On this cgroup v1 machine: LimitedSwap stops the kubelet at start-up
// with upstream's message (upstream fails early, its swap limits being
// cgroup v2 only); NoSwap runs, logs upstream's line when the behaviour is
// left unset with failSwapOn false, and, as upstream's ConfigureNoSwap on
// cgroup v1 with swap accounting, caps each container's memory+swap at
// its memory limit (memory.memsw.limit_in_bytes).
func TestSwapOnCgroupV1(t *testing.T) {
	if _, err := framework.CgroupFile(t, "memory", "/", "memory.memsw.limit_in_bytes"); err != nil {
		t.Fatalf("this test needs cgroup v1 with swap accounting (memory.memsw.limit_in_bytes): %v", err)
	}
	t.Run("LimitedSwap refused", func(t *testing.T) {
		k := framework.NewKubelet(t, "memorySwap: {swapBehavior: LimitedSwap}")
		ctx, cancel := context.WithTimeout(framework.Ctx(t), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, framework.KubeletBinary(t), k.Args()...).CombinedOutput()
		const want = "swap feature is enabled and LimitedSwap but it is only supported with cgroupv2"
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), want) {
			t.Fatalf("exit %v, output:\n%s\nwant exit 1 and %q", err, framework.Tail(string(out), 20), want)
		}
	})
	t.Run("NoSwap caps memory+swap", func(t *testing.T) {
		// failSwapOn is false in every test kubelet's configuration.
		k := framework.NewKubelet(t)
		k.WriteManifest("noswap.yaml", resourcePod("noswap", `    resources:
      requests: {memory: 32Mi}
      limits: {memory: 64Mi}`, "sleep 3600", "Always"))
		k.Start()
		p := k.WaitForPod("noswap", podTimeout, "running", running)
		if data, _ := os.ReadFile(k.LogPath); !strings.Contains(string(data), `"NoSwap is set due to memorySwapBehavior not specified"`) {
			t.Errorf("the kubelet did not log upstream's NoSwap line")
		}
		cid := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		c := path.Join(k.CgroupRoot, "kubepods", "burstable", "pod"+string(p.UID), cid)
		wantCgroup(t, "memory", c, "memory.limit_in_bytes", strconv.Itoa(64<<20))
		wantCgroup(t, "memory", c, "memory.memsw.limit_in_bytes", strconv.Itoa(64<<20))
	})
}
