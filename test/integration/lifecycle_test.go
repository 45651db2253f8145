//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// postStart runs right after the container starts, preStop before it is
// stopped; activeDeadlineSeconds fails the pod with DeadlineExceeded.
func TestLifecycleHooksAndActiveDeadline(t *testing.T) {
	k := framework.NewKubelet(t)
	hostDir := filepath.Join(t.TempDir(), "hooks")
	k.WriteManifest("hooks.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hooks
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo started > /out/poststart"]}
      preStop:
        exec: {command: ["sh", "-c", "echo stopping > /out/prestop"]}
    volumeMounts:
    - {name: out, mountPath: /out}
  volumes:
  - name: out
    hostPath: {path: %[2]s, type: DirectoryOrCreate}
`, framework.BusyboxImage, hostDir))
	k.WriteManifest("deadline.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: deadline
spec:
  activeDeadlineSeconds: 3
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, framework.BusyboxImage))
	k.Start()
	k.WaitForPod("hooks", podTimeout, "running", running)
	if data, err := os.ReadFile(filepath.Join(hostDir, "poststart")); err != nil || strings.TrimSpace(string(data)) != "started" {
		t.Fatalf("postStart hook output %q, %v (it must have run before the pod was Running)", data, err)
	}
	k.RemoveManifest("hooks.yaml")
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "preStop hook ran", func() (bool, error) {
		data, err := os.ReadFile(filepath.Join(hostDir, "prestop"))
		return err == nil && strings.TrimSpace(string(data)) == "stopping", err
	})

	p := k.WaitForPod("deadline", podTimeout, "Failed with DeadlineExceeded", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
	if !strings.Contains(p.Status.Message, "longer than the specified deadline") {
		t.Fatalf("message %q", p.Status.Message)
	}
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "deadline pod's container stopped", func() (bool, error) {
		for _, c := range framework.PodContainers(t, string(p.UID)) {
			if c.State.String() == "CONTAINER_RUNNING" {
				return false, nil
			}
		}
		return true, nil
	})
}

// A pod removed while the kubelet was down is found on the runtime at
// start-up without a spec: its preStop hook, recorded on the container,
// still runs before the container is stopped, as upstream.
func TestOrphanedPodRunsPreStop(t *testing.T) {
	k := framework.NewKubelet(t)
	hostDir := filepath.Join(t.TempDir(), "orphan")
	k.WriteManifest("orphan.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: orphan
spec:
  terminationGracePeriodSeconds: 7
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo bye > /out/prestop"]}
    volumeMounts:
    - {name: out, mountPath: /out}
  volumes:
  - name: out
    hostPath: {path: %[2]s, type: DirectoryOrCreate}
`, framework.BusyboxImage, hostDir))
	k.Start()
	p := k.WaitForPod("orphan", podTimeout, "running", running)
	k.Stop()
	k.RemoveManifest("orphan.yaml")
	k.Start()
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "orphan's preStop hook ran and its containers are gone", func() (bool, error) {
		data, err := os.ReadFile(filepath.Join(hostDir, "prestop"))
		if err != nil || strings.TrimSpace(string(data)) != "bye" {
			return false, fmt.Errorf("prestop output %q: %v", data, err)
		}
		return len(framework.PodContainers(t, string(p.UID))) == 0, nil
	})
}

// A sidecar (restartable init container) is stopped after the app
// containers, as upstream: the app's slow preStop hook finishes before the
// sidecar's runs, and an httpGet preStop hook without a host reaches the
// pod's IP, where the sidecar still serves it. The app containers exit on
// SIGTERM, so the sidecar's hook is not left the last two seconds of the
// grace period (too short for an exec on a loaded machine).
func TestSidecarStopsAfterAppContainers(t *testing.T) {
	k := framework.NewKubelet(t)
	hostDir := filepath.Join(t.TempDir(), "order")
	k.WriteManifest("sidecar.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sidecar
spec:
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: proxy
    image: %[1]s
    restartPolicy: Always
    command: ["sh", "-c", "mkdir -p /www && exec httpd -f -vv -p 8080 -h /www 2>> /host/httpd.log"]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo proxy >> /host/order"]}
    volumeMounts:
    - {name: host, mountPath: /host}
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "sleep 2; echo app >> /host/order"]}
    volumeMounts:
    - {name: host, mountPath: /host}
  - name: web
    image: %[1]s
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    lifecycle:
      preStop:
        httpGet: {path: /prestop-hook, port: 8080}
  volumes:
  - name: host
    hostPath: {path: %[2]s, type: DirectoryOrCreate}
`, framework.BusyboxImage, hostDir))
	k.Start()
	k.WaitForPod("sidecar", podTimeout, "running", running)
	k.RemoveManifest("sidecar.yaml")
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "both exec preStop hooks ran", func() (bool, error) {
		data, err := os.ReadFile(filepath.Join(hostDir, "order"))
		return strings.Count(string(data), "\n") == 2, err
	})
	data, _ := os.ReadFile(filepath.Join(hostDir, "order"))
	if got := strings.Fields(string(data)); len(got) != 2 || got[0] != "app" || got[1] != "proxy" {
		t.Fatalf("preStop order %v, want [app proxy]: the sidecar stops after the app container", got)
	}
	served, err := os.ReadFile(filepath.Join(hostDir, "httpd.log"))
	if err != nil || !strings.Contains(string(served), "/prestop-hook") {
		t.Fatalf("the httpGet preStop hook did not reach the sidecar on the pod IP (err %v); httpd log:\n%s", err, served)
	}
}
