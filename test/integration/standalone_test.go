//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

const podTimeout = 60 * time.Second

func manifest(name, restartPolicy, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
`, name, restartPolicy, framework.BusyboxImage, command)
}

func running(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

func containerState(p *v1.Pod) v1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 0 {
		return v1.ContainerStatus{}
	}
	return p.Status.ContainerStatuses[0]
}

func TestStaticPodRunsServesAndLogs(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("web.yaml", manifest("web", "Always", "echo hello-from-web; mkdir -p /www && echo it-works > /www/index.html && exec httpd -f -p 8080 -h /www"))
	start := time.Now()
	k.Start()
	p := k.WaitForPod("web", podTimeout, "running with an IP", func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" })
	t.Logf("pod running %v after kubelet start", time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(p.Status.PodIP, framework.PodSubnetPrefix) {
		t.Fatalf("pod IP %q is not on the CNI bridge", p.Status.PodIP)
	}
	if p.Namespace != "default" || p.Annotations["kubernetes.io/config.source"] != "file" || p.Spec.NodeName != k.NodeName {
		t.Fatalf("static pod identity wrong: ns %q annotations %v nodeName %q", p.Namespace, p.Annotations, p.Spec.NodeName)
	}
	var body string
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "HTTP from the pod", func() (bool, error) {
		resp, err := http.Get("http://" + p.Status.PodIP + ":8080/index.html")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200, nil
	})
	if strings.TrimSpace(body) != "it-works" {
		t.Fatalf("pod served %q", body)
	}
	logPath := filepath.Join("/var/log/pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "main", "0.log")
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "container log "+logPath, func() (bool, error) {
		data, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(data), "hello-from-web"), err
	})
	for _, c := range p.Status.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady || c.Type == v1.PodInitialized || c.Type == v1.PodReadyToStartContainers) && c.Status != v1.ConditionTrue {
			t.Fatalf("condition %s = %s, want True", c.Type, c.Status)
		}
	}

	// Removing the manifest stops the pod and removes it from the runtime.
	k.RemoveManifest("web.yaml")
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "pod gone from runtime", func() (bool, error) {
		return len(framework.PodSandboxes(t, string(p.UID))) == 0 && len(framework.PodContainers(t, string(p.UID))) == 0, nil
	})
	framework.Eventually(t, 5*time.Second, 100*time.Millisecond, "pod log dir removed", func() (bool, error) {
		_, err := os.Stat(filepath.Dir(filepath.Dir(logPath)))
		return os.IsNotExist(err), err
	})
	if p, _ := k.Pod("web"); p != nil {
		t.Fatalf("removed pod still listed: %s", p.UID)
	}
}

func TestEditedManifestReplacesPod(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("app.yaml", manifest("app", "Always", "sleep 3600"))
	k.Start()
	old := k.WaitForPod("app", podTimeout, "running", running)
	k.WriteManifest("app.yaml", manifest("app", "Always", "echo v2; sleep 3600"))
	p := k.WaitForPod("app", podTimeout, "replaced and running", func(p *v1.Pod) bool { return p.UID != old.UID && running(p) })
	if cs := framework.PodContainers(t, string(old.UID)); len(cs) != 0 {
		t.Fatalf("old pod still has %d containers", len(cs))
	}
	if len(framework.PodContainers(t, string(p.UID))) != 1 {
		t.Fatal("new pod has no container")
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("crash.yaml", manifest("crash", "Always", "exit 3"))
	k.Start()
	// Restart 1 happens at once; restart 2 only after the 10 s back-off.
	p := k.WaitForPod("crash", podTimeout, "restarted once", func(p *v1.Pod) bool { return containerState(p).RestartCount >= 1 })
	cs := containerState(p)
	p = k.WaitForPod("crash", 20*time.Second, "in CrashLoopBackOff", func(p *v1.Pod) bool {
		w := containerState(p).State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	cs = containerState(p)
	if !strings.Contains(cs.State.Waiting.Message, "back-off 10s restarting failed container=main") {
		t.Fatalf("waiting message %q", cs.State.Waiting.Message)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Fatalf("last termination %+v, want exit code 3", cs.LastTerminationState)
	}
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s, want Running", p.Status.Phase)
	}
	firstBackoff := cs.LastTerminationState.Terminated.FinishedAt.Time
	p = k.WaitForPod("crash", 40*time.Second, "restarted after back-off", func(p *v1.Pod) bool { return containerState(p).RestartCount >= 2 })
	next := framework.PodContainers(t, string(p.UID))
	var newest *runtimeapi.Container
	for _, c := range next {
		if newest == nil || c.CreatedAt > newest.CreatedAt {
			newest = c
		}
	}
	gap := time.Unix(0, newest.CreatedAt).Sub(firstBackoff)
	if gap < 9*time.Second {
		t.Fatalf("container restarted %v after it exited; want the 10 s back-off", gap)
	}
	// Dead containers are pruned: the current one and one dead per container.
	framework.Eventually(t, 5*time.Second, 100*time.Millisecond, "at most 2 containers kept for a crash-looping pod", func() (bool, error) {
		n := len(framework.PodContainers(t, string(p.UID)))
		return n <= 2, fmt.Errorf("%d containers", n)
	})
}

func TestRestartPolicies(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("never.yaml", manifest("never", "Never", "exit 1"))
	k.WriteManifest("onfailure-ok.yaml", manifest("onfailure-ok", "OnFailure", "exit 0"))
	k.WriteManifest("onfailure-bad.yaml", manifest("onfailure-bad", "OnFailure", "exit 2"))
	k.Start()
	p := k.WaitForPod("never", podTimeout, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if cs := containerState(p); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.State.Terminated.Reason != "Error" {
		t.Fatalf("Never pod container status %+v", cs)
	}
	p = k.WaitForPod("onfailure-ok", podTimeout, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if cs := containerState(p); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("OnFailure/0 container status %+v", cs)
	}
	k.WaitForPod("onfailure-bad", podTimeout, "restarted", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && containerState(p).RestartCount >= 1
	})
	// A finished pod's sandbox is stopped but its container kept for logs.
	framework.Eventually(t, 20*time.Second, 100*time.Millisecond, "sandbox of the Failed pod stopped", func() (bool, error) {
		sbs := framework.PodSandboxes(t, string(p.UID))
		return len(sbs) == 1 && sbs[0].State == runtimeapi.PodSandboxState_SANDBOX_NOTREADY, nil
	})
}

func TestInitContainersRunInOrder(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("init.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: init
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: first
    image: %[1]s
    command: ["sh", "-c", "sleep 1"]
  - name: second
    image: %[1]s
    command: ["sh", "-c", "sleep 1"]
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
`, framework.BusyboxImage))
	k.Start()
	p := k.WaitForPod("init", podTimeout, "running", running)
	ics := p.Status.InitContainerStatuses
	if len(ics) != 2 || ics[0].State.Terminated == nil || ics[1].State.Terminated == nil {
		t.Fatalf("init container statuses %+v", ics)
	}
	first, second := ics[0].State.Terminated, ics[1].State.Terminated
	if second.StartedAt.Before(&first.FinishedAt) {
		t.Fatalf("second init container started %v before the first finished %v", second.StartedAt, first.FinishedAt)
	}
	if main := containerState(p).State.Running; main == nil || main.StartedAt.Before(&second.FinishedAt) {
		t.Fatalf("app container started before init finished: %+v", containerState(p).State)
	}
}

func TestInvalidManifestIsSkipped(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("good.yaml", manifest("good", "Always", "sleep 3600"))
	// A duplicate container name fails validation; the other pod runs.
	bad := strings.Replace(manifest("bad", "Always", "sleep 3600"), "  containers:\n", "  containers:\n  - name: main\n    image: "+framework.BusyboxImage+"\n", 1)
	k.WriteManifest("bad.yaml", bad)
	k.WriteManifest("garbage.yaml", "this: [is not a pod")
	k.Start()
	k.WaitForPod("good", podTimeout, "running", running)
	if p, _ := k.Pod("bad"); p != nil {
		t.Fatal("invalid pod was accepted")
	}
	log, _ := os.ReadFile(k.LogPath)
	if !strings.Contains(string(log), "bad.yaml") || !strings.Contains(string(log), "garbage.yaml") {
		t.Fatalf("kubelet log does not name the invalid files")
	}
	// Fixing the file picks it up.
	k.WriteManifest("bad.yaml", manifest("bad", "Always", "sleep 3600"))
	k.WaitForPod("bad", podTimeout, "running once fixed", running)
	k.WaitForPod("good", 5*time.Second, "still running", running)
}

func TestKillNineAdoptsRunningPods(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("a.yaml", manifest("a", "Always", "sleep 3600"))
	k.WriteManifest("b.yaml", manifest("b", "Always", "sleep 3600"))
	k.Start()
	pa := k.WaitForPod("a", podTimeout, "running", running)
	pb := k.WaitForPod("b", podTimeout, "running", running)
	before := map[string]string{string(pa.UID): containerState(pa).ContainerID, string(pb.UID): containerState(pb).ContainerID}
	k.Kill()
	k.Start()
	for _, name := range []string{"a", "b"} {
		p := k.WaitForPod(name, podTimeout, "running after restart", running)
		cs := containerState(p)
		if cs.ContainerID != before[string(p.UID)] || cs.RestartCount != 0 {
			t.Fatalf("pod %s: container %s restartCount %d after kubelet restart; want %s, 0", name, cs.ContainerID, cs.RestartCount, before[string(p.UID)])
		}
		if n := len(framework.PodSandboxes(t, string(p.UID))); n != 1 {
			t.Fatalf("pod %s has %d sandboxes after restart, want 1", name, n)
		}
	}
}

func TestImagePullFailureBacksOff(t *testing.T) {
	k := framework.NewKubelet(t)
	k.WriteManifest("nopull.yaml", strings.Replace(manifest("nopull", "Always", "true"), framework.BusyboxImage, framework.RegistryAddr+"/does-not-exist:1", 1))
	k.Start()
	// The first failure is ErrImagePull; syncs inside the 10 s back-off then
	// report ImagePullBackOff carrying the pull error. ErrImagePull may be
	// replaced before a poll sees it, so it is checked in the message.
	p := k.WaitForPod("nopull", podTimeout, "ImagePullBackOff", func(p *v1.Pod) bool {
		w := containerState(p).State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff"
	})
	if msg := containerState(p).State.Waiting.Message; !strings.Contains(msg, "ErrImagePull") || !strings.Contains(msg, "does-not-exist") {
		t.Fatalf("waiting message %q does not carry the pull error", msg)
	}
	if p.Status.Phase != v1.PodPending {
		t.Fatalf("phase %s, want Pending", p.Status.Phase)
	}
	log, _ := os.ReadFile(k.LogPath)
	if !strings.Contains(string(log), `reason="Failed" message="Failed to pull image \"localhost:5000/does-not-exist:1\"`) {
		t.Fatal("no Failed event for the pull")
	}
	// The pull is tried again when the 10 s back-off ends, not only once
	// the back-off entry expires (10 minutes).
	pulling := `reason="Pulling" message="Pulling image \"localhost:5000/does-not-exist:1\"`
	framework.Eventually(t, 25*time.Second, 200*time.Millisecond, "a second pull after the back-off", func() (bool, error) {
		log, err := os.ReadFile(k.LogPath)
		if n := strings.Count(string(log), pulling); n < 2 {
			return false, fmt.Errorf("%d pulls so far (%v)", n, err)
		}
		return true, nil
	})
}

func TestRunOnce(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		wantExit int
		wantOut  string
	}{
		{name: "running pod exits 0", manifest: manifest("ok", "Always", "sleep 3600"), wantExit: 0, wantOut: "Running"},
		{name: "pod that cannot start exits non-zero", wantExit: 1, wantOut: "ErrImageNeverPull",
			manifest: strings.Replace(strings.Replace(manifest("fails", "Never", "true"), framework.BusyboxImage, "localhost:5000/not-here:1", 1), "IfNotPresent", "Never", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := framework.NewKubelet(t, "runOnce: true")
			k.WriteManifest("pod.yaml", tc.manifest)
			cmd := exec.Command(framework.KubeletBinary(t), k.Args()...)
			out, err := cmd.Output()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantExit || !strings.Contains(string(out), tc.wantOut) {
				t.Fatalf("exit %d output %q; want exit %d containing %q", code, out, tc.wantExit, tc.wantOut)
			}
		})
	}
}

// A second kubelet on the same lock file takes over: the first one sees the
// contention, exits 0 and releases the lock, the second one starts.
func TestLockFileHandOver(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "kubelet.lock")
	first := framework.NewKubelet(t)
	first.ExtraArgs = []string{"--lock-file", lock, "--exit-on-lock-contention"}
	first.Start()
	second := framework.NewKubelet(t)
	second.ExtraArgs = []string{"--lock-file", lock, "--exit-on-lock-contention"}
	second.Start()
	code, exited := first.ExitCode()
	if !exited || code != 0 {
		t.Fatalf("first kubelet: exited %v with code %d, want exit 0 on lock contention", exited, code)
	}
}
