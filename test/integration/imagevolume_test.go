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

	"github.com/seed-kubelet/kubelet/internal/volume"
	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// An image volume (GA in v1.36): on a runtime that mounts OCI images
// (containerd 2.x) the image is pulled by the volume's pull policy and its
// files are there read-only, a subPath of the image too; a reference that
// cannot be pulled keeps the pod in ContainerCreating with FailedMount. On
// containerd 1.6 the pod waits with a FailedMount that says the runtime
// cannot mount images, instead of starting with an empty directory.
func TestImageVolume(t *testing.T) {
	rs, _ := framework.NewCRIClient(t)
	ver, err := rs.Version(framework.Ctx(t), &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	supported := volume.ImageVolumeSupport(ver.RuntimeName, ver.RuntimeVersion) == nil
	t.Logf("runtime %s %s: image volumes supported: %v", ver.RuntimeName, ver.RuntimeVersion, supported)
	// pullPolicy Always pulls from the loopback registry whether or not the
	// image is present. (Removing it first would remove the busybox every
	// other test uses: the registry serves the same image, and the CRI
	// removes an image with all its names.)

	k := framework.NewKubelet(t)
	k.WriteManifest("img.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: img
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "ls -l /tools/bin/busybox /sub/busybox && touch /tools/x 2>/dev/null || echo read-only; sleep 3600"]
    volumeMounts:
    - {name: tools, mountPath: /tools}
    - {name: tools, mountPath: /sub, subPath: bin}
  volumes:
  - name: tools
    image:
      reference: %[2]s
      pullPolicy: Always
`, framework.BusyboxImage, framework.RegistryBusyboxImage))
	k.WriteManifest("bad.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: bad-img
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: tools, mountPath: /tools}
  volumes:
  - name: tools
    image:
      reference: %[2]s/does-not-exist:1
      pullPolicy: IfNotPresent
`, framework.BusyboxImage, framework.RegistryAddr))
	k.Start()

	waiting := func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodPending && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
	}
	k.WaitForPod("bad-img", podTimeout, "waiting in ContainerCreating", waiting)
	logHas := func(what string) {
		framework.Eventually(t, 30*time.Second, 200*time.Millisecond, what+" in the kubelet log", func() (bool, error) {
			data, err := os.ReadFile(k.LogPath)
			return strings.Contains(string(data), what), err
		})
	}
	if !supported {
		k.WaitForPod("img", podTimeout, "waiting in ContainerCreating", waiting)
		logHas(`reason="FailedMount"`)
		logHas(fmt.Sprintf(`image volumes are not supported by the container runtime containerd %s`, ver.RuntimeVersion))
		if cs := framework.PodSandboxes(t, string(mustPod(t, k, "img").UID)); len(cs) != 0 {
			t.Fatalf("a pod whose image volume cannot be mounted got a sandbox: %v", cs)
		}
		return
	}
	p := k.WaitForPod("img", podTimeout, "running", running)
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "the image's files in the container", func() (bool, error) {
		data, err := os.ReadFile(fmt.Sprintf("/var/log/pods/default_%s_%s/main/0.log", p.Name, p.UID))
		s := string(data)
		return strings.Contains(s, "/tools/bin/busybox") && strings.Contains(s, "/sub/busybox") && strings.Contains(s, "read-only"), fmt.Errorf("log %q (%v)", s, err)
	})
	logHas(fmt.Sprintf(`Successfully pulled image \"%s\"`, framework.RegistryBusyboxImage))
	logHas(`MountVolume.SetUp failed for volume \"tools\"`)
	logHas("does-not-exist")
	if st := mustPod(t, k, "bad-img"); !waiting(st) {
		t.Fatalf("pod with an unpullable image volume: %+v", st.Status)
	}
}

func mustPod(t *testing.T, k *framework.Kubelet, name string) *v1.Pod {
	t.Helper()
	p, err := k.Pod(name)
	if err != nil || p == nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return p
}
