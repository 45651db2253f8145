//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// kubectl runs kubectl with the admin kubeconfig and returns its output.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return framework.Kubectl(t, args...)
}

func TestKubectlLogsExecAttachPortForward(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)

	// A pod that logs a line a second until told to stop (then fails, so
	// --previous has something).
	logger := podOn(n.NodeName, "logger", "sh", "-c",
		`echo started; i=0; while [ ! -e /tmp/stop ]; do i=$((i+1)); echo "line $i"; sleep 1; done; echo stopping; exit 1`)
	web := podOn(n.NodeName, "web", "sh", "-c", "mkdir -p /www && echo port-forwarded > /www/index.html && exec httpd -f -p 8080 -h /www")
	interactive := podOn(n.NodeName, "interactive", "sh", "-c", "while read l; do echo \"got $l\"; done")
	interactive.Spec.Containers[0].Stdin = true
	for _, p := range []*v1.Pod{logger, web, interactive} {
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"logger", "web", "interactive"} {
		waitPod(t, n.client, ns, name, "running", podRunning)
	}

	// logs: --tail, --since, -f.
	eventually(t, 20*time.Second, "at least 3 log lines", func() (bool, error) {
		out, err := framework.TryKubectl(t, "-n", ns, "logs", "logger")
		return strings.Count(out, "line ") >= 3, err
	})
	if out := kubectl(t, "-n", ns, "logs", "logger", "--tail=2"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "line ") {
		t.Fatalf("logs --tail=2 gave %q", out)
	}
	if out := kubectl(t, "-n", ns, "logs", "logger", "--since=2s"); strings.Contains(out, "started") {
		t.Fatalf("logs --since=2s still has the first line: %q", out)
	}
	fctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	follow, _ := exec.CommandContext(fctx, filepath.Join(framework.BinDir(), "kubectl"), "--kubeconfig", framework.AdminKubeconfig(), "-n", ns, "logs", "-f", "logger").Output()
	cancel()
	if got := strings.Count(string(follow), "line "); got < 4 {
		t.Fatalf("logs -f for 4s gave %d lines: %q", got, follow)
	}

	// logs --previous after a restart.
	kubectl(t, "-n", ns, "exec", "logger", "--", "touch", "/tmp/stop")
	waitPod(t, n.client, ns, "logger", "restarted", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	if out := kubectl(t, "-n", ns, "logs", "logger", "--previous"); !strings.Contains(out, "stopping") {
		t.Fatalf("logs --previous lacks the first run's last line: %q", out)
	}
	if out := kubectl(t, "-n", ns, "logs", "logger"); strings.Contains(out, "stopping") {
		t.Fatalf("logs of the current run show the previous run's end: %q", out)
	}

	// exec: a command, and -i with stdin.
	if out := kubectl(t, "-n", ns, "exec", "web", "--", "cat", "/www/index.html"); strings.TrimSpace(out) != "port-forwarded" {
		t.Fatalf("exec cat gave %q", out)
	}
	cmd := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), "--kubeconfig", framework.AdminKubeconfig(), "-n", ns, "exec", "-i", "web", "--", "wc", "-l")
	cmd.Stdin = strings.NewReader("a\nb\nc\n")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "3" {
		t.Fatalf("exec -i wc -l gave %q, %v", out, err)
	}

	// attach: send a line to the container's stdin and read its answer.
	attach := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), "--kubeconfig", framework.AdminKubeconfig(), "-n", ns, "attach", "-i", "interactive")
	stdin, _ := attach.StdinPipe()
	stdout, _ := attach.StdoutPipe()
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	defer attach.Process.Kill()
	got := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if strings.Contains(line, "got hello-attach") || err != nil {
				got <- line
				return
			}
		}
	}()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
attachLoop:
	for {
		select {
		case line := <-got:
			if !strings.Contains(line, "got hello-attach") {
				t.Fatalf("attach read %q", line)
			}
			break attachLoop
		case <-tick.C:
			io.WriteString(stdin, "hello-attach\n")
		case <-deadline:
			t.Fatal("attach: no answer from the container")
		}
	}

	// port-forward carries an HTTP request to the pod.
	port := ifw.FreePort(t)
	pf := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), "--kubeconfig", framework.AdminKubeconfig(), "-n", ns, "port-forward", "pod/web", fmt.Sprintf("%d:8080", port))
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer pf.Process.Kill()
	var body string
	eventually(t, 20*time.Second, "HTTP through port-forward", func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200, nil
	})
	if strings.TrimSpace(body) != "port-forwarded" {
		t.Fatalf("port-forward served %q", body)
	}
}

func TestStatsSummaryAndStreamLeaks(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	busy := podOn(n.NodeName, "busy", "sh", "-c", "x=$(head -c 20000000 /dev/zero | tr '\\0' a); while :; do :; done")
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, busy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "busy", "running", podRunning)
	admin := apiClient(t, filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	base := fmt.Sprintf("https://127.0.0.1:%d", n.Port)

	eventually(t, 60*time.Second, "summary with CPU and memory for the busy pod", func() (bool, error) {
		code, body := get(t, admin, base+"/stats/summary")
		if code != http.StatusOK {
			return false, fmt.Errorf("GET /stats/summary = %d %.200s", code, body)
		}
		var s statsapi.Summary
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			return false, err
		}
		if s.Node.NodeName != n.NodeName || s.Node.CPU == nil || s.Node.Memory == nil {
			return false, fmt.Errorf("node stats %+v", s.Node)
		}
		for _, p := range s.Pods {
			if p.PodRef.Name != "busy" || p.PodRef.Namespace != ns {
				continue
			}
			for _, c := range p.Containers {
				if c.CPU != nil && c.CPU.UsageNanoCores != nil && *c.CPU.UsageNanoCores > 0 &&
					c.Memory != nil && c.Memory.WorkingSetBytes != nil && *c.Memory.WorkingSetBytes > 0 {
					return true, nil
				}
			}
			return false, fmt.Errorf("busy pod stats %+v", p.Containers)
		}
		return false, fmt.Errorf("busy pod not in the summary")
	})

	// Opening and aborting 200 exec streams leaves no goroutines behind.
	goroutines := func() int {
		_, body := get(t, admin, base+"/metrics")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "go_goroutines ") {
				v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, "go_goroutines ")), 64)
				return int(v)
			}
		}
		t.Fatal("no go_goroutines in /metrics")
		return 0
	}
	before := goroutines()
	for i := 0; i < 200; i++ {
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		c := exec.CommandContext(actx, filepath.Join(framework.BinDir(), "kubectl"), "--kubeconfig", framework.AdminKubeconfig(), "-n", ns, "exec", "busy", "--", "sleep", "30")
		c.Run()
		cancel()
	}
	eventually(t, 60*time.Second, "kubelet goroutines back to where they started", func() (bool, error) {
		now := goroutines()
		return now <= before+10, fmt.Errorf("goroutines %d, started at %d", now, before)
	})
}
