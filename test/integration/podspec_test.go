//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// execOut runs cmd in the named running container of p and returns its
// stdout; a non-zero exit fails the test unless allowFail.
func execOut(t *testing.T, p *v1.Pod, container string, allowFail bool, cmd ...string) (string, int32) {
	t.Helper()
	id := ""
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			id = strings.TrimPrefix(cs.ContainerID, "containerd://")
		}
	}
	if id == "" {
		t.Fatalf("container %s of pod %s has no ID", container, p.Name)
	}
	rs, _ := framework.NewCRIClient(t)
	resp, err := rs.ExecSync(framework.Ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	if resp.ExitCode != 0 && !allowFail {
		t.Fatalf("exec %v: exit %d, stderr %s", cmd, resp.ExitCode, resp.Stderr)
	}
	return strings.TrimSpace(string(resp.Stdout)), resp.ExitCode
}

func waitingReason(p *v1.Pod, container string) (string, string) {
	for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.Name == container && cs.State.Waiting != nil {
			return cs.State.Waiting.Reason, cs.State.Waiting.Message
		}
	}
	return "", ""
}

// logHas reports whether the kubelet log matches re.
func logHas(k *framework.Kubelet, re string) bool {
	data, _ := os.ReadFile(k.LogPath)
	return regexp.MustCompile(re).Match(data)
}

// A volume that cannot be set up keeps the pod waiting in ContainerCreating
// with upstream's FailedMount event and no sandbox; once the volume can be
// set up the pod starts on its own.
func TestVolumeSetUpFailureWaitsWithFailedMount(t *testing.T) {
	k := framework.NewKubelet(t)
	dir := filepath.Join(t.TempDir(), "later")
	k.WriteManifest("mount.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: mount
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    hostPath: {path: %s, type: Directory}
`, framework.BusyboxImage, dir))
	k.Start()
	p := k.WaitForPod("mount", podTimeout, "waiting in ContainerCreating", func(p *v1.Pod) bool {
		r, _ := waitingReason(p, "main")
		return p.Status.Phase == v1.PodPending && r == "ContainerCreating"
	})
	want := fmt.Sprintf(`reason="FailedMount" message="MountVolume.SetUp failed for volume \"data\" : hostPath type check failed: %s is not a directory"`, dir)
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "FailedMount event", func() (bool, error) {
		return logHas(k, regexp.QuoteMeta(want)), nil
	})
	if sbs := framework.PodSandboxes(t, string(p.UID)); len(sbs) != 0 {
		t.Fatalf("a sandbox was created before the volume was set up: %v", sbs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	k.WaitForPod("mount", podTimeout, "running once the directory exists", running)
}

// Pod and container security contexts reach the container: user, group,
// supplemental groups with the fsGroup, fsGroup ownership (with setgid) of
// emptyDir and downwardAPI volumes, a read-only root filesystem and
// capabilities.
func TestSecurityContextAndFSGroup(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("sec.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sec
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsUser: 1000
    runAsGroup: 2000
    supplementalGroups: [3000]
    fsGroup: 4000
    fsGroupChangePolicy: OnRootMismatch
  containers:
  - name: user
    image: %[1]s
    command: ["sleep", "3600"]
    securityContext:
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: info, mountPath: /info}
  - name: root
    image: %[1]s
    command: ["sleep", "3600"]
    securityContext:
      runAsUser: 0
      capabilities: {drop: [ALL], add: [CHOWN, SYS_TIME]}
  volumes:
  - name: scratch
    emptyDir: {}
  - name: info
    downwardAPI:
      defaultMode: 0400
      items:
      - path: name
        fieldRef: {fieldPath: metadata.name}
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("sec", podTimeout, "running", running)

	if out, _ := execOut(t, p, "user", false, "id", "-u"); out != "1000" {
		t.Errorf("uid %q, want 1000", out)
	}
	if out, _ := execOut(t, p, "user", false, "id", "-g"); out != "2000" {
		t.Errorf("gid %q, want 2000", out)
	}
	groups, _ := execOut(t, p, "user", false, "id", "-G")
	for _, g := range []string{"2000", "3000", "4000"} {
		if !strings.Contains(" "+groups+" ", " "+g+" ") {
			t.Errorf("groups %q lack %s (runAsGroup, supplementalGroups, fsGroup)", groups, g)
		}
	}
	if out, _ := execOut(t, p, "user", false, "stat", "-c", "%g %A", "/scratch"); out != "4000 drwxrwsrwx" {
		t.Errorf("emptyDir %q, want group 4000 with setgid", out)
	}
	execOut(t, p, "user", false, "touch", "/scratch/new")
	if out, _ := execOut(t, p, "user", false, "stat", "-c", "%u %g", "/scratch/new"); out != "1000 4000" {
		t.Errorf("new file in the emptyDir %q, want owner 1000 and the inherited fsGroup 4000", out)
	}
	if out, _ := execOut(t, p, "user", false, "stat", "-L", "-c", "%g %a", "/info/name"); out != "4000 440" {
		t.Errorf("downwardAPI file %q, want group 4000 mode 440 (0400 plus group read)", out)
	}
	if out, _ := execOut(t, p, "user", false, "cat", "/info/name"); out != k.StaticPodName("sec") {
		t.Errorf("the fsGroup member cannot read its 0400 file: %q", out)
	}
	if _, code := execOut(t, p, "user", true, "touch", "/rootfs-write"); code == 0 {
		t.Error("readOnlyRootFilesystem: writing to / succeeded")
	}
	if out, _ := execOut(t, p, "user", false, "grep", "CapBnd", "/proc/self/status"); !strings.HasSuffix(out, "0000000000000400") {
		t.Errorf("user container bounding set %q, want only NET_BIND_SERVICE (bit 10)", out)
	}
	// CHOWN is bit 0, SYS_TIME bit 25.
	if out, _ := execOut(t, p, "root", false, "grep", "CapEff", "/proc/self/status"); !strings.HasSuffix(out, "0000000002000001") {
		t.Errorf("root container effective set %q, want CHOWN and SYS_TIME only", out)
	}
	if out, _ := execOut(t, p, "root", false, "id", "-u"); out != "0" {
		t.Errorf("container runAsUser 0 overrides the pod's: uid %q", out)
	}
}

// hostname, subdomain and setHostnameAsFQDN set the container's hostname;
// the managed /etc/hosts carries the pod's FQDN and hostAliases;
// shareProcessNamespace puts all containers in one PID namespace.
func TestHostnameHostsAndSharedProcessNamespace(t *testing.T) {
	k := framework.NewKubelet(t, "clusterDomain: cluster.local")
	k.WriteManifest("names.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: names
spec:
  terminationGracePeriodSeconds: 1
  hostname: myhost
  subdomain: mysub
  setHostnameAsFQDN: true
  shareProcessNamespace: true
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo.local, bar.local]
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
  - name: other
    image: %[1]s
    command: ["sleep", "3601"]
`, framework.BusyboxImage))
	k.WriteManifest("plain.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: plain
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
  - name: other
    image: %[1]s
    command: ["sleep", "3601"]
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("names", podTimeout, "running with an IP", func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" })
	const fqdn = "myhost.mysub.default.svc.cluster.local"
	if out, _ := execOut(t, p, "main", false, "hostname"); out != fqdn {
		t.Errorf("hostname %q, want %q", out, fqdn)
	}
	hosts, _ := execOut(t, p, "main", false, "cat", "/etc/hosts")
	for _, line := range []string{p.Status.PodIP + "\t" + fqdn + "\tmyhost", "10.1.2.3\tfoo.local\tbar.local"} {
		if !strings.Contains(hosts, line) {
			t.Errorf("/etc/hosts lacks %q:\n%s", line, hosts)
		}
	}
	if ps, _ := execOut(t, p, "main", false, "ps"); !strings.Contains(ps, "sleep 3601") {
		t.Errorf("shared PID namespace: main does not see the other container:\n%s", ps)
	}
	plain := k.WaitForPod("plain", podTimeout, "running", running)
	if out, _ := execOut(t, plain, "main", false, "hostname"); out != k.StaticPodName("plain") {
		t.Errorf("default hostname %q, want the pod name", out)
	}
	if ps, _ := execOut(t, plain, "main", false, "ps"); strings.Contains(ps, "sleep 3601") {
		t.Errorf("without shareProcessNamespace main sees the other container:\n%s", ps)
	}
}

// runAsNonRoot refuses an image that runs as root unless runAsUser says
// otherwise, with upstream's CreateContainerConfigError message.
func TestRunAsNonRoot(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("nonroot.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: nonroot
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
  containers:
  - name: image-root
    image: %[1]s
    command: ["sleep", "3600"]
  - name: explicit-user
    image: %[1]s
    command: ["sleep", "3600"]
    securityContext: {runAsUser: 1000}
  - name: explicit-root
    image: %[1]s
    command: ["sleep", "3600"]
    securityContext: {runAsUser: 0}
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("nonroot", podTimeout, "root containers refused, the other running", func(p *v1.Pod) bool {
		r1, _ := waitingReason(p, "image-root")
		r2, _ := waitingReason(p, "explicit-root")
		ok := false
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "explicit-user" && cs.State.Running != nil {
				ok = true
			}
		}
		return ok && r1 == "CreateContainerConfigError" && r2 == "CreateContainerConfigError"
	})
	desc := fmt.Sprintf("%s_default(%s)", p.Name, p.UID)
	if _, msg := waitingReason(p, "image-root"); msg != fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: image-root)", desc) {
		t.Errorf("image-root message %q", msg)
	}
	if _, msg := waitingReason(p, "explicit-root"); msg != fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: explicit-root)", desc) {
		t.Errorf("explicit-root message %q", msg)
	}
}

// FallbackToLogsOnError reports the log tail of a failed container that
// wrote no message; File reports only the file.
func TestTerminationMessageFallbackToLogs(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("term.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: term
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: fallback
    image: %[1]s
    command: ["sh", "-c", "for i in $(seq 1 100); do echo line $i; done; exit 3"]
    terminationMessagePolicy: FallbackToLogsOnError
  - name: file-wins
    image: %[1]s
    command: ["sh", "-c", "echo noise; echo from-file > /dev/termination-log; exit 4"]
    terminationMessagePolicy: FallbackToLogsOnError
  - name: file-only
    image: %[1]s
    command: ["sh", "-c", "echo noise; exit 5"]
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("term", podTimeout, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	msgs := map[string]string{}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			msgs[cs.Name] = cs.State.Terminated.Message
		}
	}
	var want strings.Builder
	for i := 21; i <= 100; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if msgs["fallback"] != want.String() {
		t.Errorf("fallback message %q, want the last 80 log lines", msgs["fallback"])
	}
	if msgs["file-wins"] != "from-file\n" {
		t.Errorf("file-wins message %q", msgs["file-wins"])
	}
	if msgs["file-only"] != "" {
		t.Errorf("file-only message %q, want none", msgs["file-only"])
	}
}

// Safe sysctls are set in the pod; others only when allowedUnsafeSysctls
// lists them, else the pod fails admission with SysctlForbidden.
func TestSysctls(t *testing.T) {
	k := framework.NewKubelet(t, "allowedUnsafeSysctls: [\"kernel.msg*\"]")
	pod := func(name, sysctl, value string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    sysctls:
    - {name: %s, value: %q}
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, name, sysctl, value, framework.BusyboxImage)
	}
	k.WriteManifest("safe.yaml", pod("safe", "net.ipv4.ip_unprivileged_port_start", "81"))
	k.WriteManifest("allowed.yaml", pod("allowed", "kernel.msgmax", "9000"))
	k.WriteManifest("forbidden.yaml", pod("forbidden", "kernel.sem", "250 32000 100 128"))
	k.Start()
	safe := k.WaitForPod("safe", podTimeout, "running", running)
	if out, _ := execOut(t, safe, "main", false, "cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start"); out != "81" {
		t.Errorf("safe sysctl value %q", out)
	}
	allowed := k.WaitForPod("allowed", podTimeout, "running", running)
	if out, _ := execOut(t, allowed, "main", false, "cat", "/proc/sys/kernel/msgmax"); out != "9000" {
		t.Errorf("allowed unsafe sysctl value %q", out)
	}
	// Standalone /pods does not list rejected pods; the kubelet logs the
	// rejection (the e2e test sees the Failed status in the API server).
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "forbidden pod rejected", func() (bool, error) {
		return logHas(k, regexp.QuoteMeta(`"Pod rejected at admission" pod="default/`+k.StaticPodName("forbidden")+`"`)+
			`.*`+regexp.QuoteMeta(`reason="SysctlForbidden" message="forbidden sysctl: \"kernel.sem\" not allowlisted"`)), nil
	})
	rs, _ := framework.NewCRIClient(t)
	sbs, err := rs.ListPodSandbox(framework.Ctx(t), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": k.StaticPodName("forbidden")}}})
	if err != nil || len(sbs.Items) != 0 {
		t.Errorf("a rejected pod got a sandbox: %v %v", sbs, err)
	}
}
