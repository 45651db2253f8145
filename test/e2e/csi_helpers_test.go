//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// csiTopologyKey is the topology segment the stand-in driver reports.
const csiTopologyKey = "topology.hostpath.csi.seed.test/node"

// csiOpts configures the stand-in CSI driver of a test.
type csiOpts struct {
	// attach makes the driver need ControllerPublishVolume; the CSIDriver
	// then says attachRequired and the provisioner also attaches.
	attach bool
	// requiresRepublish, podInfo and tokens set the CSIDriver's fields.
	requiresRepublish bool
	noPodInfo         bool
	tokenAudience     string
	fsGroupPolicy     storagev1.FSGroupPolicy
	// noCSIDriver creates no CSIDriver object.
	noCSIDriver bool
	driverArgs  []string
}

// csiStandIn is the stand-in CSI driver, its registrar and provisioner,
// running as processes against one of our kubelets, as a DaemonSet and a
// controller Deployment would in a cluster.
type csiStandIn struct {
	t        *testing.T
	n        *node
	opts     csiOpts
	name     string // driver name
	socket   string
	dataDir  string
	logDir   string
	bin      string
	procs    map[string]*exec.Cmd
	crashRun string // NodePublishVolume dies while this file exists
	failRun  string // NodePublishVolume fails while this file exists
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startCSI starts the stand-ins for n's kubelet (which must be running or
// about to start) and creates the CSIDriver object; everything goes away
// when the test ends, mounts left behind included.
func startCSI(t *testing.T, n *node, opts csiOpts) *csiStandIn {
	t.Helper()
	dir := t.TempDir()
	c := &csiStandIn{
		t: t, n: n, opts: opts, name: "hp-" + randHex(3) + ".csi.seed.test",
		socket: filepath.Join("/run/seed-csi-e2e", randHex(4), "csi.sock"), dataDir: filepath.Join(dir, "data"), logDir: dir,
		bin: filepath.Join(framework.BinDir(), "csistandin"), procs: map[string]*exec.Cmd{},
		crashRun: filepath.Join(dir, "crash-publish"), failRun: filepath.Join(dir, "fail-publish"),
	}
	if _, err := os.Stat(c.bin); err != nil {
		t.Fatalf("%s is missing: build it with `bash hack/build-cluster-tools.sh csistandin`", c.bin)
	}
	ctx := ctxT(t)
	if !opts.noCSIDriver {
		policy := opts.fsGroupPolicy
		if policy == "" {
			policy = storagev1.FileFSGroupPolicy
		}
		drv := &storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired:       ptr.To(opts.attach),
				PodInfoOnMount:       ptr.To(!opts.noPodInfo),
				RequiresRepublish:    ptr.To(opts.requiresRepublish),
				FSGroupPolicy:        &policy,
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral},
			},
		}
		if opts.tokenAudience != "" {
			drv.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: opts.tokenAudience}}
		}
		if _, err := n.client.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.client.StorageV1().CSIDrivers().Delete(context.Background(), c.name, metav1.DeleteOptions{}) })
	}
	// Registered last: runs first when the test ends, before the kubelet
	// stops and its directories go.
	t.Cleanup(c.stopAll)
	c.startDriver()
	c.startRegistrar()
	prov := []string{"provisioner", "--kubeconfig", framework.AdminKubeconfig(), "--csi-address", c.socket}
	if opts.attach {
		prov = append(prov, "--attach")
	}
	c.start("provisioner", prov...)
	return c
}

func (c *csiStandIn) start(name string, args ...string) {
	c.t.Helper()
	logf, err := os.OpenFile(filepath.Join(c.logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	c.procs[name] = cmd
	go func() { cmd.Wait(); logf.Close() }()
}

// stop ends a stand-in: SIGKILL when kill, else SIGTERM.
func (c *csiStandIn) stop(name string, kill bool) {
	cmd, ok := c.procs[name]
	if !ok {
		return
	}
	delete(c.procs, name)
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
	}
}

func (c *csiStandIn) startDriver() {
	c.t.Helper()
	args := []string{"driver", "--endpoint", c.socket, "--nodeid", c.n.NodeName, "--drivername", c.name, "--datadir", c.dataDir,
		"--crash-publish-if", c.crashRun, "--fail-publish-if", c.failRun}
	if c.opts.attach {
		args = append(args, "--attach")
	}
	c.start("driver", append(args, c.opts.driverArgs...)...)
	eventually(c.t, 20*time.Second, "driver socket", func() (bool, error) {
		_, err := os.Stat(c.socket)
		return err == nil, err
	})
}

func (c *csiStandIn) startRegistrar() {
	c.start("registrar", "registrar", "--csi-address", c.socket, "--registration-dir", filepath.Join(c.n.RootDir, "plugins_registry"))
}

// stopAll stops the stand-ins, then lazily unmounts whatever is still
// mounted below the kubelet's root and the driver's data so that removing
// the test's directories never reaches into a volume.
func (c *csiStandIn) stopAll() {
	for name := range c.procs {
		c.stop(name, false)
	}
	if c.t.Failed() {
		for _, name := range []string{"driver", "registrar", "provisioner"} {
			if data, err := os.ReadFile(filepath.Join(c.logDir, name+".log")); err == nil {
				c.t.Logf("%s log (last 40 lines):\n%s", name, ifw.Tail(string(data), 40))
			}
		}
	}
	for _, dir := range []string{c.n.RootDir, c.dataDir} {
		for _, m := range mountsUnder(dir) {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	os.RemoveAll(filepath.Dir(c.socket))
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// storageClass creates a StorageClass provisioned by the stand-in.
func (c *csiStandIn) storageClass() string {
	c.t.Helper()
	name := "sc-" + randHex(4)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: c.name,
		ReclaimPolicy: ptr.To(v1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := c.n.client.StorageV1().StorageClasses().Create(ctxT(c.t), sc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		c.n.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// waitRegistered waits for the driver's CSINode entry.
func (c *csiStandIn) waitRegistered() *storagev1.CSINode {
	c.t.Helper()
	var cn *storagev1.CSINode
	eventually(c.t, 30*time.Second, "driver "+c.name+" in the CSINode", func() (bool, error) {
		var err error
		cn, err = c.n.client.StorageV1().CSINodes().Get(ctxT(c.t), c.n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == c.name {
				return true, nil
			}
		}
		return false, fmt.Errorf("drivers %v", cn.Spec.Drivers)
	})
	return cn
}

func claim(name, class, size string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// podWithClaim is podOn with the claim mounted at /data.
func podWithClaim(nodeName, name, claimName string, command ...string) *v1.Pod {
	p := podOn(nodeName, name, command...)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return p
}

// boundVolume waits for the claim to be bound and returns its volume.
func boundVolume(t *testing.T, n *node, ns, claimName string) *v1.PersistentVolume {
	t.Helper()
	ctx := ctxT(t)
	var pv *v1.PersistentVolume
	eventually(t, 60*time.Second, "claim "+claimName+" bound", func() (bool, error) {
		pvc, err := n.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
		if err != nil || pvc.Status.Phase != v1.ClaimBound {
			return false, err
		}
		pv, err = n.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, err
	})
	return pv
}

// csiPaths are where upstream's layout puts a CSI volume of a pod.
func csiPaths(rootDir, driver, handle, podUID, specName string) (global, podMount string) {
	global = filepath.Join(rootDir, "plugins", "kubernetes.io", "csi", driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
	podMount = filepath.Join(rootDir, "pods", podUID, "volumes", "kubernetes.io~csi", specName, "mount")
	return global, podMount
}

func isMounted(path string) bool {
	for _, m := range mountsUnder(path) {
		if m == path {
			return true
		}
	}
	return false
}

// podLog reads a container's first log file.
func podLog(ns string, p *v1.Pod, container string) (string, error) {
	return readFile(fmt.Sprintf("/var/log/pods/%s_%s_%s/%s/0.log", ns, p.Name, p.UID, container))
}

// deletePodAndWait deletes a pod and waits until the API no longer has it.
func deletePodAndWait(t *testing.T, n *node, ns, name string, within time.Duration) time.Duration {
	t.Helper()
	ctx := ctxT(t)
	start := time.Now()
	if err := n.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, within, "pod "+name+" deleted", func() (bool, error) {
		_, err := n.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return false, fmt.Errorf("still there")
		}
		return strings.Contains(err.Error(), "not found"), err
	})
	return time.Since(start)
}

// waitEvent waits for a kubelet event of the pod with reason whose message
// contains text.
func waitEvent(t *testing.T, n *node, ns, pod, reason, text string) v1.Event {
	t.Helper()
	var got v1.Event
	eventually(t, 60*time.Second, fmt.Sprintf("%s event containing %q for %s", reason, text, pod), func() (bool, error) {
		var seen []string
		for _, e := range podEvents(t, n, ns, pod, reason) {
			if strings.Contains(e.Message, text) {
				got = e
				return true, nil
			}
			seen = append(seen, e.Message)
		}
		return false, fmt.Errorf("events: %q", seen)
	})
	return got
}

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }
