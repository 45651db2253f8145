//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

func resourcePod(name, resources, command, restartPolicy string) string {
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
    command: ["sh", "-c", %q]
%s
`, name, restartPolicy, framework.BusyboxImage, command, resources)
}

func memTotal(t *testing.T) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal")
	return 0
}

// wantCgroup checks one cgroup file.
func wantCgroup(t *testing.T, controller, cgroup, file, want string) {
	t.Helper()
	got, err := framework.CgroupFile(t, controller, cgroup, file)
	if err != nil || got != want {
		t.Errorf("%s %s/%s = %q (%v), want %q", controller, cgroup, file, got, err, want)
	}
}

const unlimitedV1 = "9223372036854771712"

// Pods land in their QoS class's cgroup under the kubelet's cgroupRoot with
// upstream's limits; kubepods holds node allocatable; a pod over its memory
// limit is OOMKilled (exit 137) and the kernel's report is read; a stray pod
// cgroup is removed by housekeeping, a deleted pod's cgroup with it.
func TestPodCgroupsQoSAndOOM(t *testing.T) {
	k := framework.NewKubelet(t, "podPidsLimit: 100", "systemReserved: {cpu: 500m, memory: 1Gi}")
	k.WriteManifest("guaranteed.yaml", resourcePod("guaranteed", `    resources:
      limits: {cpu: 250m, memory: 64Mi}`, "sleep 3600", "Always"))
	k.WriteManifest("besteffort.yaml", resourcePod("besteffort", "", "sleep 3600", "Always"))
	k.WriteManifest("burstable.yaml", resourcePod("burstable", `    resources:
      requests: {cpu: 100m}`, "sleep 3600", "Always"))
	k.WriteManifest("oom.yaml", resourcePod("oom", `    resources:
      limits: {memory: 50Mi}`, "head -c 200m /dev/zero | tail", "Never"))
	k.Start()

	kubepods := path.Join(k.CgroupRoot, "kubepods")
	g := k.WaitForPod("guaranteed", podTimeout, "running", running)
	be := k.WaitForPod("besteffort", podTimeout, "running", running)
	b := k.WaitForPod("burstable", podTimeout, "running", running)
	for p, want := range map[*v1.Pod]v1.PodQOSClass{g: v1.PodQOSGuaranteed, be: v1.PodQOSBestEffort, b: v1.PodQOSBurstable} {
		if p.Status.QOSClass != want {
			t.Errorf("pod %s qosClass %q, want %q", p.Name, p.Status.QOSClass, want)
		}
	}

	// Node allocatable on kubepods: capacity minus systemReserved.
	wantCgroup(t, "memory", kubepods, "memory.limit_in_bytes", strconv.FormatInt(memTotal(t)-1<<30, 10))
	ncpu := 0
	if out, err := exec.Command("nproc", "--all").Output(); err == nil {
		ncpu, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if ncpu > 0 {
		wantCgroup(t, "cpu", kubepods, "cpu.shares", strconv.Itoa(ncpu*1024-512))
	}
	// QoS cgroups: besteffort the minimum, burstable its pods' requests.
	wantCgroup(t, "cpu", path.Join(kubepods, "besteffort"), "cpu.shares", "2")
	wantCgroup(t, "cpu", path.Join(kubepods, "burstable"), "cpu.shares", "102")

	gc := path.Join(kubepods, "pod"+string(g.UID))
	wantCgroup(t, "cpu", gc, "cpu.shares", "256")
	wantCgroup(t, "cpu", gc, "cpu.cfs_period_us", "100000")
	wantCgroup(t, "cpu", gc, "cpu.cfs_quota_us", "25000")
	wantCgroup(t, "memory", gc, "memory.limit_in_bytes", strconv.Itoa(64<<20))
	wantCgroup(t, "pids", gc, "pids.max", "100")
	// The runtime put the container below the pod cgroup.
	cid := strings.TrimPrefix(g.Status.ContainerStatuses[0].ContainerID, "containerd://")
	wantCgroup(t, "memory", path.Join(gc, cid), "memory.limit_in_bytes", strconv.Itoa(64<<20))

	bec := path.Join(kubepods, "besteffort", "pod"+string(be.UID))
	wantCgroup(t, "cpu", bec, "cpu.shares", "2")
	wantCgroup(t, "cpu", bec, "cpu.cfs_quota_us", "-1")
	wantCgroup(t, "memory", bec, "memory.limit_in_bytes", unlimitedV1)
	wantCgroup(t, "pids", bec, "pids.max", "100")
	bc := path.Join(kubepods, "burstable", "pod"+string(b.UID))
	wantCgroup(t, "cpu", bc, "cpu.shares", "102")
	wantCgroup(t, "memory", bc, "memory.limit_in_bytes", unlimitedV1)

	// The memory hog is killed by the kernel and reported as upstream does.
	oom := k.WaitForPod("oom", podTimeout, "OOMKilled", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	term := oom.Status.ContainerStatuses[0].State.Terminated
	if term.Reason != "OOMKilled" || term.ExitCode != 137 || oom.Status.Phase != v1.PodFailed {
		t.Errorf("oom pod: phase %s, terminated %+v; want Failed, OOMKilled, 137", oom.Status.Phase, term)
	}
	wantCgroup(t, "memory", path.Join(kubepods, "burstable", "pod"+string(oom.UID)), "memory.limit_in_bytes", strconv.Itoa(50<<20))
	framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "the kernel's OOM report read by the kubelet", func() (bool, error) {
		data, err := os.ReadFile(k.LogPath)
		return strings.Contains(string(data), `"OOM kill in a memory cgroup" cgroup="`+path.Join(kubepods, "burstable", "pod"+string(oom.UID))), err
	})

	// A pod cgroup no pod owns is removed by housekeeping.
	stray := path.Join(kubepods, "besteffort", "pod00000000-0000-0000-0000-00000000dead")
	framework.CreateCgroupRoot(t, stray)
	framework.Eventually(t, 15*time.Second, 200*time.Millisecond, "orphaned pod cgroup removed", func() (bool, error) {
		return !framework.CgroupExists(t, stray), nil
	})
	if !framework.CgroupExists(t, gc) || !framework.CgroupExists(t, bec) {
		t.Fatal("housekeeping removed cgroups of running pods")
	}

	// A deleted pod's cgroup goes with it.
	k.RemoveManifest("guaranteed.yaml")
	framework.Eventually(t, 30*time.Second, 200*time.Millisecond, "deleted pod's cgroup removed", func() (bool, error) {
		return !framework.CgroupExists(t, gc), nil
	})
}

// The kubelet refuses to start, naming the problem, when its cgroups
// cannot be set up as configured. A runtime that reports its own cgroup
// driver (CRI RuntimeConfig: containerd 2.x) overrides cgroupDriver, as
// upstream, so there the systemd case starts on the runtime's cgroupfs.
func TestCgroupStartupErrors(t *testing.T) {
	rs, _ := framework.NewCRIClient(t)
	runtimeDriver := ""
	if rc, err := rs.RuntimeConfig(framework.Ctx(t), &runtimeapi.RuntimeConfigRequest{}); err == nil {
		runtimeDriver = rc.GetLinux().GetCgroupDriver().String()
	}
	systemdWant := `but systemd is not running on this machine (no /run/systemd/system)`
	if runtimeDriver == runtimeapi.CgroupDriver_CGROUPFS.String() {
		systemdWant = `Using cgroup driver setting received from the CRI runtime; the configured cgroupDriver is ignored`
	}
	cases := []struct {
		name     string
		args     []string
		failOnV1 bool
		want     string
		starts   bool
	}{
		{name: "cgroup v1 refused unless failCgroupV1 is false", failOnV1: true,
			want: `kubelet is configured to not run on a host using cgroup v1`},
		{name: "cgroupRoot missing", args: []string{"--cgroup-root", "/seed-cm-does-not-exist"},
			want: `does not exist: missing /sys/fs/cgroup/cpu/seed-cm-does-not-exist`},
		{name: "systemd driver without systemd", args: []string{"--cgroup-driver", "systemd"},
			want: systemdWant, starts: runtimeDriver == runtimeapi.CgroupDriver_CGROUPFS.String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat("/run/systemd/system"); err == nil && strings.Contains(tc.name, "systemd") {
				t.Skip("systemd runs here")
			}
			k := framework.NewKubelet(t)
			if tc.failOnV1 {
				data, err := os.ReadFile(k.ConfigPath)
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(k.ConfigPath, []byte(strings.Replace(string(data), "failCgroupV1: false", "failCgroupV1: true", 1)), 0o644)
			}
			ctx, cancel := context.WithTimeout(framework.Ctx(t), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, framework.KubeletBinary(t), append(k.Args(), tc.args...)...)
			if tc.starts {
				// It runs: wait for the line, then stop it.
				var out lockedBuffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { cmd.Process.Kill(); cmd.Wait() }()
				framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "the kubelet to log "+tc.want, func() (bool, error) {
					return strings.Contains(out.String(), tc.want), nil
				})
				return
			}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %v, output:\n%s\nwant exit 1 and %q", err, framework.Tail(string(out), 20), tc.want)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and a test's
// reads at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
