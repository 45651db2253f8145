//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// A static pod with hostUsers: false. On a runtime with user namespaces
// (containerd 2.x with runc 1.2+; CONTAINER_RUNTIME_ENDPOINT), root in the
// pod is a host ID range of its own, and every volume is an idmapped
// mount: what the pod's root writes to a hostPath, a disk emptyDir (ext4)
// and a memory emptyDir (tmpfs) is owned by root on the host, and the
// host's root-owned /etc/hosts is root's in the pod. On containerd 1.6 the
// pod waits with upstream's error. Which one runs is the runtime's CRI
// status: the test checks the one it has.
func TestStaticPodUserNamespace(t *testing.T) {
	k := framework.NewKubelet(t)
	host := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}
	k.WriteManifest("userns.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: userns
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "cat /proc/self/uid_map > /out/uid_map; id -u > /out/id; stat -c %%u /etc/hosts > /out/hosts; touch /data/f; stat -c %%u /data/f > /out/data; touch /ram/f; stat -c %%u /ram/f > /out/ram; touch /out/done; sleep 3600"]
    volumeMounts:
    - {name: out, mountPath: /out}
    - {name: data, mountPath: /data}
    - {name: ram, mountPath: /ram}
  volumes:
  - name: out
    hostPath: {path: %s}
  - name: data
    emptyDir: {}
  - name: ram
    emptyDir: {medium: Memory}
`, framework.BusyboxImage, host))
	k.Start()
	rs, _ := framework.NewCRIClient(t)
	status, err := rs.Status(framework.Ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	supported := false
	for _, h := range status.GetRuntimeHandlers() {
		if h.GetName() == "" && h.GetFeatures().GetUserNamespaces() {
			supported = true
		}
	}
	if !supported {
		p := k.WaitForPod("userns", 60*time.Second, "waiting with the runtime's refusal", func(p *v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil
		})
		data, _ := os.ReadFile(k.LogPath)
		want := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if !strings.Contains(string(data), want) {
			t.Fatalf("kubelet log lacks %q (pod %v)", want, p.Status)
		}
		t.Logf("runtime %s has no user namespaces: the pod waits with %q", framework.RuntimeEndpoint(), want)
		return
	}
	framework.Eventually(t, 90*time.Second, 100*time.Millisecond, "the pod's report", func() (bool, error) {
		_, err := os.Stat(filepath.Join(host, "done"))
		return err == nil, err
	})
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(host, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	fields := strings.Fields(read("uid_map"))
	if len(fields) != 3 || fields[0] != "0" || fields[1] == "0" || fields[2] != "65536" {
		t.Fatalf("uid_map %q: want 0 <a host ID of its own> 65536", read("uid_map"))
	}
	for name, want := range map[string]string{"id": "0", "hosts": "0", "data": "0", "ram": "0"} {
		if got := read(name); got != want {
			t.Errorf("%s: %q, want %q (idmapped)", name, got, want)
		}
	}
	// On the host, what the pod's root wrote is root's, not host ID
	// fields[1]'s: the hostPath is idmapped.
	st, err := os.Stat(filepath.Join(host, "done"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("the pod's file is owned by host UID %d, want 0", uid)
	}
	t.Logf("user namespace %s; volumes idmapped on ext4 (hostPath, emptyDir) and tmpfs (emptyDir medium Memory)", read("uid_map"))
}
