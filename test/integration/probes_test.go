//go:build integration

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// execIn runs a command in the pod's running container through the CRI.
func execIn(t *testing.T, p *v1.Pod, cmd ...string) {
	t.Helper()
	rs, _ := framework.NewCRIClient(t)
	id := strings.TrimPrefix(containerState(p).ContainerID, "containerd://")
	resp, err := rs.ExecSync(framework.Ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec %v: %v (exit %d, %s)", cmd, err, resp.GetExitCode(), resp.GetStderr())
	}
}

// Readiness follows an HTTP probe; a failing exec liveness probe restarts
// the container with upstream's Killing message.
func TestProbes(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("probed.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: probed
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "mkdir -p /www; touch /tmp/healthy; exec httpd -f -p 8080 -h /www"]
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {command: ["cat", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("probed", podTimeout, "running but not ready", func(p *v1.Pod) bool { return running(p) && !podReady(p) })
	// A negative check: after several failed probes it is still not ready.
	time.Sleep(3 * time.Second)
	if p, _ = k.Pod("probed"); podReady(p) || containerState(p).Ready {
		t.Fatal("ready although /ready answers 404")
	}
	execIn(t, p, "sh", "-c", "echo ok > /www/ready")
	p = k.WaitForPod("probed", 20*time.Second, "ready once /ready answers", podReady)
	if !containerState(p).Ready {
		t.Fatal("pod Ready but container not ready")
	}

	execIn(t, p, "rm", "/tmp/healthy")
	p = k.WaitForPod("probed", 30*time.Second, "restarted by the liveness probe", func(p *v1.Pod) bool {
		return containerState(p).RestartCount >= 1 && running(p)
	})
	log, _ := os.ReadFile(k.LogPath)
	if !strings.Contains(string(log), "Container main failed liveness probe, will be restarted") {
		t.Fatal("no Killing event for the liveness failure")
	}
}
