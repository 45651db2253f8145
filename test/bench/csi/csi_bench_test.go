//go:build e2e

// Package csibench measures what a CSI volume adds to a pod's start: the
// time from creating a pod (bound to the node) to the API showing it Ready,
// without a volume and with a claim of the stand-in CSI driver (already
// provisioned and bound, so only the kubelet's part is measured), on our
// kubelet and on the upstream kubelet, each a node of the test control plane
// with the same configuration, driver and runtime. hack/bench-csi.sh runs it;
// test/bench/RESULTS.md has the numbers.
package csibench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// Runs per kubelet and kind of pod (BENCH_CSI_RUNS).
func runs() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_CSI_RUNS")); err == nil && n > 0 {
		return n
	}
	return 10
}

func TestCSIPodStartLatency(t *testing.T) {
	cp := framework.ControlPlane(t)
	nodeIP := cniAddress(t)
	var report []string
	for _, flavor := range []string{"ours", "upstream"} {
		bin := ""
		if flavor == "upstream" {
			bin = framework.UpstreamKubelet(t)
		}
		plain, withCSI := measure(t, cp.Client, flavor, bin, nodeIP)
		report = append(report, fmt.Sprintf("| %s | %s | %s | %+.0f ms |", flavor, summary(plain), summary(withCSI),
			float64(median(withCSI)-median(plain))/float64(time.Millisecond)))
	}
	out := "| kubelet | pod without volume (median / p90) | pod with a CSI claim (median / p90) | CSI adds (median) |\n| --- | --- | --- | --- |\n" + strings.Join(report, "\n")
	t.Logf("pod created → Ready in the API, %d runs each:\n%s", runs(), out)
	if path := os.Getenv("BENCH_CSI_OUT"); path != "" {
		os.WriteFile(path, []byte(out+"\n"), 0o644)
	}
}

// measure runs one kubelet as a node with the stand-in driver and times
// pods without and with a CSI claim, alternating.
func measure(t *testing.T, c kubernetes.Interface, flavor, bin, nodeIP string) (plain, withCSI []time.Duration) {
	nodeName := "bench-csi-" + flavor
	creds := framework.NodeCredentials(t, nodeName)
	k := ifw.NewKubeletWithAuth(t, fmt.Sprintf(`authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook`, creds.CACert), "cgroupsPerQOS: false", "enforceNodeAllocatable: []", "cgroupDriver: cgroupfs", "nodeStatusUpdateFrequency: 4s")
	k.NodeName, k.Binary = nodeName, bin
	// Runs before the kubelet stops and its root goes: nothing mounted
	// below the root may stay (the upstream kubelet keeps a volume mounted
	// for a while after its pod is gone).
	t.Cleanup(func() { unmountUnder(k.RootDir) })
	k.ExtraArgs = append(k.ExtraArgs, "--kubeconfig", creds.Kubeconfig, "--node-ip", nodeIP)
	ctx := context.Background()
	c.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{})
	t.Cleanup(func() { c.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	k.Start()
	waitFor(t, time.Minute, "node Ready", func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionTrue
			}
		}
		return false
	})
	driver := startStandIns(t, c, k, flavor)

	ns := "bench-csi-" + flavor + "-" + strconv.FormatInt(time.Now().Unix(), 36)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	waitFor(t, time.Minute, "default service account", func() bool {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	n := runs()
	for i := range n + 1 { // the first of each is a warm-up
		name := fmt.Sprintf("claim-%d", i)
		pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &driver.class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}}}}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Minute, "claims bound", func() bool {
		list, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, p := range list.Items {
			if p.Status.Phase != v1.ClaimBound {
				return false
			}
		}
		return len(list.Items) == n+1
	})
	for i := range n + 1 {
		p := readyTime(t, c, ns, pod(nodeName, fmt.Sprintf("plain-%d", i), ""))
		q := readyTime(t, c, ns, pod(nodeName, fmt.Sprintf("csi-%d", i), fmt.Sprintf("claim-%d", i)))
		if i > 0 {
			plain, withCSI = append(plain, p), append(withCSI, q)
		}
	}
	return plain, withCSI
}

func pod(nodeName, name, claim string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
		NodeName: nodeName, TerminationGracePeriodSeconds: ptr.To(int64(1)),
		Containers: []v1.Container{{Name: "main", Image: ifw.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sleep", "3600"}}},
	}}
	if claim != "" {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	return p
}

// readyTime creates the pod, returns how long until the API shows it
// Ready, then deletes it and waits until it is gone.
func readyTime(t *testing.T, c kubernetes.Interface, ns string, p *v1.Pod) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.Name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*v1.Pod)
		if !ok {
			continue
		}
		if ready(got) {
			took = time.Since(start)
			break
		}
	}
	if took == 0 {
		t.Fatalf("pod %s never became Ready", p.Name)
	}
	if err := c.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod "+p.Name+" gone", func() bool {
		_, err := c.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{})
		return err != nil
	})
	return took
}

func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

type standIns struct{ class string }

// startStandIns runs the stand-in driver, registrar and provisioner for the
// node, with its CSIDriver and StorageClass; all go when the test ends.
func startStandIns(t *testing.T, c kubernetes.Interface, k *ifw.Kubelet, flavor string) standIns {
	bin := filepath.Join(framework.BinDir(), "csistandin")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: bash hack/build-cluster-tools.sh csistandin", bin)
	}
	name := "bench-" + flavor + ".csi.seed.test"
	dir := t.TempDir()
	sock := filepath.Join("/run/seed-csi-bench", flavor, "csi.sock")
	ctx := context.Background()
	drv := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}}
	c.StorageV1().CSIDrivers().Delete(ctx, name, metav1.DeleteOptions{})
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := "bench-" + flavor
	c.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{})
	if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: name,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	start := func(args ...string) {
		logf, err := os.Create(filepath.Join(dir, args[0]+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
			p.Wait()
		}
		c.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
		c.StorageV1().CSIDrivers().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	start("driver", "--endpoint", sock, "--nodeid", k.NodeName, "--drivername", name, "--datadir", filepath.Join(dir, "data"))
	waitFor(t, 20*time.Second, "driver socket", func() bool { _, err := os.Stat(sock); return err == nil })
	start("registrar", "--csi-address", sock, "--registration-dir", filepath.Join(k.RootDir, "plugins_registry"))
	start("provisioner", "--kubeconfig", framework.AdminKubeconfig(), "--csi-address", sock)
	waitFor(t, 30*time.Second, "driver registered in the CSINode", func() bool {
		cn, err := c.StorageV1().CSINodes().Get(ctx, k.NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == name {
				return true
			}
		}
		return false
	})
	return standIns{class: class}
}

// cniAddress is the CNI bridge's address: the upstream kubelet refuses a
// loopback node IP, so both kubelets use this one.
func cniAddress(t *testing.T) string {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show", "dev", "cni0").Output()
	if err != nil {
		t.Fatalf("no CNI bridge cni0: %v", err)
	}
	f := strings.Fields(string(out))
	for i, x := range f {
		if x == "inet" && i+1 < len(f) {
			return strings.Split(f[i+1], "/")[0]
		}
	}
	t.Fatalf("no IPv4 address on cni0: %s", out)
	return ""
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ifw.Eventually(t, timeout, 50*time.Millisecond, what, func() (bool, error) { return cond(), nil })
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

func pct(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[int(q*float64(len(s)-1)+0.5)]
}

func summary(d []time.Duration) string {
	return fmt.Sprintf("%d / %d ms", median(d).Milliseconds(), pct(d, 0.9).Milliseconds())
}

// unmountUnder lazily unmounts everything mounted at or below dir.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
}
