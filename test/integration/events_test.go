//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// On a runtime with the CRI container event stream (containerd 2.x), a
// container's exit reaches the kubelet from the stream, not from a relist.
func TestContainerExitSeenFromEventStream(t *testing.T) {
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", framework.Containerd2Endpoint)
	k := framework.NewKubelet(t)
	k.WriteManifest("exits.yaml", manifest("exits", "Never", "sleep 2; exit 7"))
	k.Start()
	p := k.WaitForPod("exits", podTimeout, "Failed with exit code 7", func(p *v1.Pod) bool {
		t := containerState(p).State.Terminated
		return p.Status.Phase == v1.PodFailed && t != nil && t.ExitCode == 7
	})
	id := strings.TrimPrefix(containerState(p).ContainerID, "containerd://")
	framework.Eventually(t, 5*time.Second, 100*time.Millisecond, "a ContainerDied event from the stream", func() (bool, error) {
		log, err := os.ReadFile(k.LogPath)
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, `"SyncLoop (PLEG)"`) && strings.Contains(line, `event="ContainerDied"`) &&
				strings.Contains(line, id) && strings.Contains(line, `source="stream"`) {
				return true, nil
			}
		}
		return false, err
	})
	log, _ := os.ReadFile(k.LogPath)
	if !strings.Contains(string(log), "Following the runtime's container event stream") {
		t.Fatal("the kubelet did not follow the event stream")
	}
}
