//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// privateContainerd starts hack/private-containerd.sh NAME (containerd
// 2.x with version 2) and stops it when the test ends; it returns the
// CRI endpoint.
func privateContainerd(t *testing.T, name string, version int) string {
	t.Helper()
	script := filepath.Join(framework.RepoRoot(), "hack", "private-containerd.sh")
	cmd := exec.Command("bash", script, name)
	cmd.Env = append(os.Environ(), fmt.Sprintf("CONTAINERD_VERSION=%d", version))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", script, name, err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, name, "stop").CombinedOutput(); err != nil {
			t.Errorf("stop containerd %s: %v\n%s", name, err, out)
		}
	})
	return strings.TrimSpace(string(out))
}

// Pods with hostUsers: false (user namespaces, GA in v1.36) on containerd
// 2.x with a runc that has idmapped mounts: the pod's root is an
// unprivileged host ID range of 65536 (from the kubelet's range, recorded
// in the pod's directory), and its volumes are idmapped so files the host
// owns (configMap, /etc/hosts) and files the pod writes (emptyDir) show as
// root inside. On Debian's containerd 1.6, which reports no user-namespace
// support, the pod gets upstream's error instead.
func TestUserNamespaces(t *testing.T) {
	c16 := ifw.RuntimeEndpoint()
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", privateContainerd(t, "e2e-userns2", 2))
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	if _, err := n.client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"key": "value"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	no := false
	p := podOn(n.NodeName, "userns", "sh", "-c",
		"echo uid_map $(cat /proc/self/uid_map); echo cfg $(stat -c '%u:%g' /etc/cfg/key); echo hosts $(stat -c %u /etc/hosts); "+
			"touch /data/f; echo data $(stat -c %u /data/f); echo whoami $(id -u); exec sleep 3600")
	p.Spec.HostUsers = &no
	p.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "data", MountPath: "/data"}}
	created, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "userns", "running", podRunning)
	var logs string
	eventually(t, 30*time.Second, "the pod's report", func() (bool, error) {
		out, err := framework.TryKubectl(t, "-n", ns, "logs", "userns")
		logs = out
		return strings.Contains(out, "whoami"), err
	})
	raw, err := os.ReadFile(filepath.Join(n.RootDir, "pods", string(created.UID), "userns"))
	if err != nil {
		t.Fatalf("the pod's user namespace record: %v", err)
	}
	var rec struct {
		UIDMappings []struct{ HostID, ContainerID, Length uint32 } `json:"uidMappings"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || len(rec.UIDMappings) != 1 {
		t.Fatalf("record %s: %v", raw, err)
	}
	host := rec.UIDMappings[0].HostID
	if host < 65536 || host%65536 != 0 || rec.UIDMappings[0].Length != 65536 {
		t.Fatalf("record %s: want 65536 IDs at a multiple of 65536, never 0", raw)
	}
	for _, want := range []string{
		fmt.Sprintf("uid_map 0 %d 65536", host), // root in the pod is host ID `host`
		"cfg 0:0",                               // a host-owned file shows as root: idmapped configMap (tmpfs)
		"hosts 0",                               // and /etc/hosts (the pod's directory, ext4)
		"data 0",                                // what root writes shows as root: idmapped emptyDir
		"whoami 0",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the pod's report lacks %q:\n%s", want, logs)
		}
	}
	node, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	supports := false
	for _, h := range node.Status.RuntimeHandlers {
		if h.Name == "" && h.Features != nil && h.Features.UserNamespaces != nil && *h.Features.UserNamespaces {
			supports = true
		}
	}
	if !supports {
		t.Errorf("node runtimeHandlers %+v: the default handler should report user namespaces", node.Status.RuntimeHandlers)
	}

	// containerd 1.6: upstream's error, as an event, and no sandbox.
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", c16)
	old := joinNode(t, "podLogsDir: "+t.TempDir())
	old.Start()
	p16 := podOn(old.NodeName, "userns16")
	p16.Spec.HostUsers = &no
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p16, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	eventually(t, 60*time.Second, "FailedCreatePodSandBox for hostUsers: false on containerd 1.6", func() (bool, error) {
		for _, e := range podEvents(t, old, ns, "userns16", "FailedCreatePodSandBox") {
			if e.Message == want {
				return true, nil
			}
		}
		return false, nil
	})
	got, err := n.client.CoreV1().Pods(ns).Get(context.Background(), "userns16", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", got.Status.Phase)
	}
}
