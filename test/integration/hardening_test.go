//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/volume"
	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// CVE-2021-25741. The kubelet checks a subPath and hands the runtime a
// path; a container sharing the volume swaps a component for a symlink to
// the host in between. The test stands where the kubelet stands: it sets
// the volume up and computes the container's mounts (volume.Manager.Mounts,
// what kuberuntime calls right before CreateContainer), swaps the subPath
// (rename + symlink to a host directory), then creates and starts the
// container on the real runtime with those mounts. The container must see
// the checked directory, never the host's.
func TestSubPathSwapBeforeCreateContainer(t *testing.T) {
	rs, _ := framework.NewCRIClient(t)
	ctx := framework.Ctx(t)
	pods, host := filepath.Join(t.TempDir(), "pods"), t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "host-secret"), []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	sbCfg := framework.PodSandboxConfig(t, "subpath-swap")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "subpath-swap", Namespace: "integration", UID: "subpath-swap-uid"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{Name: "victim", Image: framework.BusyboxImage,
				VolumeMounts: []v1.VolumeMount{{Name: "shared", MountPath: "/mnt", SubPath: "sub"}}}},
		},
	}
	m := volume.New(volume.Config{PodsDir: pods})
	t.Cleanup(func() {
		if err := m.TearDown(string(pod.UID)); err != nil {
			t.Errorf("tear down: %v", err)
		}
		if err := m.RemovePodDir(string(pod.UID)); err != nil {
			t.Errorf("remove pod dir: %v", err)
		}
	})
	if res := m.SetUpPod(ctx, pod); len(res.Failed) != 0 {
		t.Fatalf("SetUpPod: %+v", res)
	}
	vol := volume.VolumeDir(pods, string(pod.UID), &pod.Spec.Volumes[0])
	if err := os.MkdirAll(filepath.Join(vol, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "sub", "mine"), []byte("volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's move, between set-up and CreateContainer.
	if err := os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "sub.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(vol, "sub")); err != nil {
		t.Fatal(err)
	}
	t.Logf("runtime mounts %s at /mnt", mounts[0].HostPath)

	sb := framework.RunPodSandbox(t, rs, sbCfg)
	resp, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: sbCfg, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "victim"},
		Image:    &runtimeapi.ImageSpec{Image: framework.BusyboxImage},
		Command:  []string{"sleep", "3600"},
		Mounts:   mounts,
		LogPath:  "victim.log",
	}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	framework.CleanupContainer(t, rs, resp.ContainerId)
	if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	run := func(cmd ...string) (string, int32) {
		r, err := rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: resp.ContainerId, Cmd: cmd, Timeout: 10})
		if err != nil {
			t.Fatalf("exec %v: %v", cmd, err)
		}
		return strings.TrimSpace(string(r.Stdout)), r.ExitCode
	}
	if out, code := run("cat", "/mnt/host-secret"); code == 0 {
		t.Fatalf("the container reads the host's file through the swapped subPath: %q", out)
	}
	if out, code := run("cat", "/mnt/mine"); code != 0 || out != "volume" {
		t.Fatalf("the container does not see the checked subPath: %q (exit %d)", out, code)
	}
}

// CVE-2017-1002101. An init container plants a symlink to a host directory
// in a shared emptyDir; the app container's subPath goes below it and does
// not exist yet. The kubelet must not create it on the host (it used to
// MkdirAll through the symlink); the container fails with upstream's
// CreateContainerConfigError message and the host directory stays empty.
func TestSubPathCreateRefusesSymlinkOut(t *testing.T) {
	k := framework.NewKubelet(t)
	host := t.TempDir()
	k.WriteManifest("escape.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: escape
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: plant
    image: %[1]s
    command: ["ln", "-s", "%[2]s", "/data/escape"]
    volumeMounts:
    - {name: data, mountPath: /data}
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "echo pwned > /out/pwned; sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /out, subPath: escape/created}
  volumes:
  - name: data
    emptyDir: {}
`, framework.BusyboxImage, host))
	k.Start()
	p := k.WaitForPod("escape", podTimeout, "main waiting with CreateContainerConfigError", func(p *v1.Pod) bool {
		reason, _ := waitingReason(p, "main")
		return reason == "CreateContainerConfigError"
	})
	_, msg := waitingReason(p, "main")
	if want := `failed to create subPath directory for volumeMount "data" of container "main"`; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if entries, _ := os.ReadDir(host); len(entries) != 0 {
		t.Fatalf("the kubelet created %s in the host directory", entries[0].Name())
	}
}

// Subpaths reach the runtime as bind mounts under the pod's
// volume-subpaths directory (directory and file subPaths, on disk and on
// tmpfs); the downwardAPI volume is a tmpfs. Removing the pod unmounts all
// of it and removes the pod directory.
func TestSubPathBindMountsAndTeardown(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("sub.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sub
  labels: {tier: sub}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo hello > /a/f; sleep 3600"]
    volumeMounts:
    - {name: scratch, mountPath: /a, subPath: one/two}
    - {name: ram, mountPath: /r, subPath: inram}
    - {name: info, mountPath: /labels, subPath: labels}
    - {name: info, mountPath: /info}
  volumes:
  - name: scratch
    emptyDir: {}
  - name: ram
    emptyDir: {medium: Memory}
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("sub", podTimeout, "running", running)
	podDir := filepath.Join(k.RootDir, "pods", string(p.UID))
	for i := 0; i < 3; i++ {
		vol := []string{"scratch", "ram", "info"}[i]
		target := volume.SubPathTarget(podDir, vol, "main", i)
		if !isMountPoint(t, target) {
			t.Errorf("subPath %d of volume %s is not bound at %s", i, vol, target)
		}
	}
	if out, _ := execOut(t, p, "main", false, "cat", "/labels"); !strings.Contains(out, `tier="sub"`) {
		t.Errorf("/labels = %q", out)
	}
	if out, _ := execOut(t, p, "main", false, "sh", "-c", "grep -E ' /info | /r ' /proc/mounts | cut -d' ' -f3 | sort -u"); out != "tmpfs" {
		t.Errorf("filesystems of /info and /r: %q, want tmpfs", out)
	}
	// CVE-2017-1002102: API data volumes are read-only in the container,
	// so it cannot plant the symlinks that once made the kubelet's atomic
	// writer delete host files.
	if out, code := execOut(t, p, "main", true, "sh", "-c", "ln -s / /info/evil 2>&1"); code == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("writing into the downwardAPI volume: exit %d %q, want a read-only file system", code, out)
	}
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "the subPath write", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(podDir, "volumes/kubernetes.io~empty-dir/scratch/one/two/f"))
		return err == nil && strings.TrimSpace(string(b)) == "hello", err
	})
	info := filepath.Join(podDir, "volumes/kubernetes.io~downward-api/info")
	if fsType(t, info) != "tmpfs" {
		t.Errorf("downwardAPI volume %s is not a tmpfs", info)
	}
	k.RemoveManifest("sub.yaml")
	waitPodDirGone(t, podDir)
}

// After a kubelet restart, the subPath binds and tmpfs mounts of a pod that
// went while the kubelet was down are unmounted and its directory removed
// (they used to stay forever: a pod directory with mounts was skipped).
func TestLeftoverMountsCleanedAfterRestart(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("left.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: left
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /a, subPath: x}
    - {name: ram, mountPath: /r}
  volumes:
  - name: scratch
    emptyDir: {}
  - name: ram
    emptyDir: {medium: Memory}
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("left", podTimeout, "running", running)
	podDir := filepath.Join(k.RootDir, "pods", string(p.UID))
	k.Kill()
	k.RemoveManifest("left.yaml")
	framework.RemovePodsOfNode(t, k.NodeName)
	if n := len(mountsBelow(t, podDir)); n != 2 {
		t.Errorf("%d mounts below the pod dir before the restart, want 2 (the subPath bind and the tmpfs)", n)
	}
	k.Start()
	waitPodDirGone(t, podDir)
}

// A mount someone else left below a pod directory (an admin's bind mount,
// outside any volume plugin's directory) keeps the directory: the kubelet
// never deletes through it. Once it is unmounted, housekeeping removes the
// directory. (A CSI volume's own mount that will not go holds the pod in
// termination instead, as upstream; the CSI tests cover that.)
func TestPodDirWithForeignMountIsKept(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("held.yaml", manifest("held", "Always", "sleep 3600"))
	k.Start()
	p := k.WaitForPod("held", podTimeout, "running", running)
	podDir := filepath.Join(k.RootDir, "pods", string(p.UID))
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "precious"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(podDir, "admin", "bind")
	if err := os.MkdirAll(at, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(host, at, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(at, unix.MNT_DETACH) })
	k.RemoveManifest("held.yaml")
	framework.Eventually(t, podTimeout, 200*time.Millisecond, "the pod gone from the runtime", func() (bool, error) {
		return len(framework.PodSandboxes(t, string(p.UID))) == 0, nil
	})
	precious := filepath.Join(host, "precious")
	framework.Eventually(t, 30*time.Second, 200*time.Millisecond, "housekeeping to refuse the pod directory (or to delete through the mount)", func() (bool, error) {
		_, err := os.Stat(precious)
		return os.IsNotExist(err) || logHas(k, `Orphaned pod found, but its directory cannot be removed yet.*`+string(p.UID)), nil
	})
	if b, err := os.ReadFile(filepath.Join(host, "precious")); err != nil || string(b) != "keep" {
		t.Fatalf("the kubelet deleted through the mount: %q %v", b, err)
	}
	if _, err := os.Stat(at); err != nil {
		t.Fatalf("the mount point went: %v", err)
	}
	if err := unix.Unmount(at, 0); err != nil {
		t.Fatal(err)
	}
	waitPodDirGone(t, podDir)
	if b, err := os.ReadFile(filepath.Join(host, "precious")); err != nil || string(b) != "keep" {
		t.Fatalf("the bind source: %q %v", b, err)
	}
}

func waitPodDirGone(t *testing.T, podDir string) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "pod directory unmounted and removed", func() (bool, error) {
		if ms := mountsBelow(t, podDir); len(ms) > 0 {
			return false, fmt.Errorf("mounted: %v", ms)
		}
		_, err := os.Lstat(podDir)
		return os.IsNotExist(err), err
	})
}

// mountsBelow lists the mount points at or below dir.
func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	return out
}

func isMountPoint(t *testing.T, path string) bool {
	return fsType(t, path) != ""
}

// fsType is the type of the topmost filesystem mounted at path, "" if none.
func fsType(t *testing.T, path string) string {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		t.Fatal(err)
	}
	typ, id := "", -1
	for _, m := range ms {
		if m.ID > id {
			typ, id = m.FSType, m.ID
		}
	}
	return typ
}

// enableDebuggingHandlers: false takes away what upstream takes away, on
// the real kubelet API port; the read-only port never serves them.
func TestDebuggingHandlersGated(t *testing.T) {
	cases := []struct {
		name   string
		config string
		want   map[string]string // path on port 10250 -> "<code> <body prefix>"
	}{
		{name: "debugging off", config: "enableDebuggingHandlers: false", want: map[string]string{
			"/exec/ns/pod/c?command=ls&output=1": "405 Debug endpoints are disabled.",
			"/portForward/ns/pod":                "405 Debug endpoints are disabled.",
			"/containerLogs/ns/pod/c":            "405 Debug endpoints are disabled.",
			"/runningpods/":                      "405 Debug endpoints are disabled.",
			"/logs/":                             "405 Debug endpoints are disabled.",
			"/debug/pprof/":                      "405 Debug endpoints are disabled.",
			"/configz":                           "404",
			"/pods":                              "200 {",
			"/healthz":                           "200 ok",
		}},
		{name: "system logs and profiling off", config: "enableSystemLogHandler: false\nenableProfilingHandler: false", want: map[string]string{
			"/logs/":        "405 logs endpoint is disabled.",
			"/debug/pprof/": "405 profiling endpoint is disabled.",
			"/runningpods/": "200 {",
			"/configz":      "200 {",
		}},
		{name: "contention profiling", config: "enableContentionProfiling: true", want: map[string]string{
			"/debug/pprof/block?debug=1": "200 --- contention:",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := framework.NewKubelet(t, tc.config)
			k.Start()
			for path, w := range tc.want {
				code, body := apiGet(t, k, path)
				wantCode, wantBody, _ := strings.Cut(w, " ")
				if fmt.Sprint(code) != wantCode || !strings.HasPrefix(body, wantBody) {
					t.Errorf("GET %s = %d %q, want %s %q", path, code, firstLine(body), wantCode, wantBody)
				}
				if strings.HasPrefix(path, "/debug/pprof/block") {
					// Block profiling is on: the kubelet's goroutines
					// block on channels all the time (the sync loop's
					// ticks), so samples appear; with it off none ever do.
					framework.Eventually(t, 15*time.Second, 200*time.Millisecond, "samples in the block profile", func() (bool, error) {
						_, body := apiGet(t, k, path)
						return strings.Contains(body, " @ 0x"), nil
					})
				}
			}
			for _, path := range []string{"/exec/ns/pod/c", "/runningpods/", "/logs/", "/debug/pprof/"} {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", k.ReadOnlyPort, path))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("read-only port GET %s = %d, want 405", path, resp.StatusCode)
				}
			}
		})
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// Upstream's conformance spec "EmptyDir volumes when FSGroup is specified
// ... nonexistent volume subPath should have the correct mode and owner
// using FSGroup": the subPath the kubelet creates gets the volume's mode
// (a tmpfs root's 1777 plus the fsGroup's setgid bit) and the fsGroup.
func TestSubPathCreatedWithTheVolumesMode(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("mode.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: mode
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    fsGroup: 123
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: vol, mountPath: /test-volume, subPath: test-sub}
  volumes:
  - name: vol
    emptyDir: {medium: Memory}
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("mode", podTimeout, "running", running)
	if out, _ := execOut(t, p, "main", false, "stat", "-c", "%A %u %g", "/test-volume"); out != "drwxrwsrwt 0 123" {
		t.Errorf("the created subPath is %q, want drwxrwsrwt 0 123 (upstream's dgtrwxrwxrwx, root, fsGroup)", out)
	}
	k.RemoveManifest("mode.yaml")
	waitPodDirGone(t, filepath.Join(k.RootDir, "pods", string(p.UID)))
}
