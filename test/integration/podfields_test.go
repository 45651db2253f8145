//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// What a user sees for pod fields this kubelet does not act on
// (podspec.Fields): a warned field (a regular container's restartPolicy and
// restartPolicyRules) lets the pod run with an UnsupportedField warning
// naming it; runtimeClassName without an API server runs the pod on the
// default handler, as upstream, with an UnsupportedField warning saying so.
func TestPodFieldsWarned(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("sandboxed.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sandboxed
spec:
  runtimeClassName: gvisor
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, framework.BusyboxImage))
	k.WriteManifest("rules.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: rules
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
`, framework.BusyboxImage))
	k.Start()
	k.WaitForPod("sandboxed", podTimeout, "running", running)
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "the runtimeClassName warning", func() (bool, error) {
		return logHas(k, `reason="UnsupportedField" message="runtimeClassName \\"gvisor\\" is ignored: without an API server`), nil
	})
	k.WaitForPod("rules", podTimeout, "running", running)
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "the UnsupportedField warning", func() (bool, error) {
		return logHas(k, `reason="UnsupportedField" message="This kubelet does not implement spec\.containers\[0\]\.restartPolicy \(ignored: [^)]*\); spec\.containers\[0\]\.restartPolicyRules \(ignored: `), nil
	})
}

// recursiveReadOnly, as upstream, on whatever the runtime offers (its CRI
// status lists the handlers that can do it: containerd 2.x's default does,
// 1.6 lists none). A tmpfs is mounted inside the volume: a recursively
// read-only mount makes it read-only too, a plain read-only one does not.
// Without runtime support Enabled fails the container with upstream's
// error and IfPossible falls back to the plain read-only mount.
func TestRecursiveReadOnly(t *testing.T) {
	rs, _ := framework.NewCRIClient(t)
	st, err := rs.Status(framework.Ctx(t), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	supported := false
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			supported = h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	t.Logf("runtime's default handler supports recursive read-only mounts: %v", supported)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })

	k := framework.NewKubelet(t)
	k.WriteManifest("rro.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: rro
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: ifpossible
    image: %[1]s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true, recursiveReadOnly: IfPossible}
  - name: enabled
    image: %[1]s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true, recursiveReadOnly: Enabled}
  volumes:
  - name: data
    hostPath: {path: %[2]s}
`, framework.BusyboxImage, dir))
	k.Start()
	if supported {
		p := k.WaitForPod("rro", podTimeout, "both running", allRunning)
		for _, c := range []string{"ifpossible", "enabled"} {
			if _, code := execOut(t, p, c, true, "touch", "/data/sub/x"); code == 0 {
				t.Errorf("%s: the tmpfs below the recursively read-only mount was writable", c)
			}
		}
		return
	}
	p := k.WaitForPod("rro", podTimeout, "enabled waiting with CreateContainerConfigError, ifpossible running", func(p *v1.Pod) bool {
		r, _ := waitingReason(p, "enabled")
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "ifpossible" && cs.State.Running != nil {
				return r == "CreateContainerConfigError"
			}
		}
		return false
	})
	if _, msg := waitingReason(p, "enabled"); msg != `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime` {
		t.Errorf("enabled: waiting message %q", msg)
	}
	if _, code := execOut(t, p, "ifpossible", true, "touch", "/data/x"); code == 0 {
		t.Errorf("ifpossible: the read-only mount was writable")
	}
	if _, code := execOut(t, p, "ifpossible", true, "touch", "/data/sub/x"); code != 0 {
		t.Errorf("ifpossible: the tmpfs below a plain read-only mount was not writable (recursively read-only without runtime support?)")
	}
}
