//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// Volumes a static pod can use without an API server: an emptyDir shared
// by an init container and the app container, a memory-backed emptyDir, a
// hostPath created on demand and a downwardAPI file. Removing the pod
// unmounts its tmpfs and removes its directory.
func TestStaticPodVolumes(t *testing.T) {
	k := framework.NewKubelet(t)
	hostDir := filepath.Join(t.TempDir(), "host-data")
	k.WriteManifest("vols.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels:
    tier: test
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: prepare
    image: %[1]s
    command: ["sh", "-c", "echo prepared > /shared/ready"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "cat /shared/ready > /host/out; grep -c tmpfs /proc/mounts > /host/tmpfs; cat /info/labels > /host/labels; sleep 3600"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: ram, mountPath: /ram}
    - {name: host, mountPath: /host}
    - {name: info, mountPath: /info}
  volumes:
  - name: shared
    emptyDir: {}
  - name: ram
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
  - name: host
    hostPath: {path: %[2]s, type: DirectoryOrCreate}
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
`, framework.BusyboxImage, hostDir))
	k.Start()
	p := k.WaitForPod("vols", podTimeout, "running", running)
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "files written through the volumes", func() (bool, error) {
		out, err := os.ReadFile(filepath.Join(hostDir, "out"))
		if err != nil {
			return false, err
		}
		labels, err := os.ReadFile(filepath.Join(hostDir, "labels"))
		return strings.TrimSpace(string(out)) == "prepared" && strings.Contains(string(labels), `tier="test"`), err
	})
	podDir := filepath.Join(k.RootDir, "pods", string(p.UID))
	ramDir := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "ram")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(mounts), ramDir) {
		t.Fatalf("the Memory emptyDir %s is not a mount", ramDir)
	}
	k.RemoveManifest("vols.yaml")
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "pod directory removed and tmpfs unmounted", func() (bool, error) {
		_, err := os.Stat(podDir)
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		return os.IsNotExist(err) && !strings.Contains(string(mounts), ramDir), err
	})
	if _, err := os.Stat(filepath.Join(hostDir, "out")); err != nil {
		t.Fatalf("hostPath data must survive the pod: %v", err)
	}
}
