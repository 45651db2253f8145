//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// A dynamically provisioned volume: the driver registers through the plugin
// watcher (CSINode, node labels and annotation), a pod writes a file, is
// deleted (volume unpublished and unstaged), and a new pod reads it back.
func TestCSIDynamicVolumeKeepsData(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)

	cn := c.waitRegistered()
	for _, d := range cn.Spec.Drivers {
		if d.Name == c.name && (d.NodeID != n.NodeName || len(d.TopologyKeys) != 1 || d.TopologyKeys[0] != csiTopologyKey) {
			t.Errorf("CSINode driver entry %+v", d)
		}
	}
	if len(cn.OwnerReferences) != 1 || cn.OwnerReferences[0].Kind != "Node" || cn.OwnerReferences[0].Name != n.NodeName {
		t.Errorf("CSINode owners %v", cn.OwnerReferences)
	}
	if cn.Annotations[v1.MigratedPluginsAnnotationKey] == "" {
		t.Errorf("CSINode without %s", v1.MigratedPluginsAnnotationKey)
	}
	eventually(t, 10*time.Second, "node topology label and node ID annotation", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ids := map[string]string{}
		json.Unmarshal([]byte(nd.Annotations["csi.volume.kubernetes.io/nodeid"]), &ids)
		return nd.Labels[csiTopologyKey] == n.NodeName && ids[c.name] == n.NodeName, fmt.Errorf("labels %v annotations %v", nd.Labels, nd.Annotations)
	})

	sc := c.storageClass()
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("data", sc, "16Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stage := time.Now()
	pv := boundVolume(t, n, ns, "data")
	t.Logf("claim bound after %v", time.Since(stage).Round(time.Millisecond))
	writer := podWithClaim(n.NodeName, "writer", "data", "sh", "-c", "echo hello-from-writer > /data/file; sleep 3600")
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, writer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := waitPod(t, n.client, ns, "writer", "running", podRunning)
	global, target := csiPaths(n.RootDir, c.name, pv.Spec.CSI.VolumeHandle, string(w.UID), pv.Name)
	if !isMounted(global) || !isMounted(target) {
		t.Fatalf("staged %v at %s, published %v at %s", isMounted(global), global, isMounted(target), target)
	}
	var data map[string]string
	b, err := os.ReadFile(filepath.Join(filepath.Dir(target), "vol_data.json"))
	if err == nil {
		err = json.Unmarshal(b, &data)
	}
	if err != nil || data["driverName"] != c.name || data["volumeHandle"] != pv.Spec.CSI.VolumeHandle || data["specVolID"] != pv.Name || data["volumeLifecycleMode"] != "Persistent" {
		t.Errorf("pod vol_data.json %s (%v)", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(global), "vol_data.json")); err != nil || !strings.Contains(string(b), pv.Spec.CSI.VolumeHandle) {
		t.Errorf("global vol_data.json %s (%v)", b, err)
	}
	eventually(t, 10*time.Second, "file written into the volume", func() (bool, error) {
		data, err := readFile(filepath.Join(target, "file"))
		return data == "hello-from-writer\n", err
	})
	// The driver's NodeGetVolumeStats in /stats/summary, with the claim.
	admin := apiClient(t, filepath.Join(framework.PKIDir, "admin.crt"), filepath.Join(framework.PKIDir, "admin.key"))
	statsStart := time.Now()
	defer func() { t.Logf("volume stats reported after %v", time.Since(statsStart).Round(time.Millisecond)) }()
	eventually(t, 30*time.Second, "the claim's volume in /stats/summary", func() (bool, error) {
		code, body := get(t, admin, fmt.Sprintf("https://127.0.0.1:%d/stats/summary", n.Port))
		if code != http.StatusOK {
			return false, fmt.Errorf("GET /stats/summary = %d %.200s", code, body)
		}
		var s statsapi.Summary
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			return false, err
		}
		for _, p := range s.Pods {
			if p.PodRef.Name != "writer" || p.PodRef.Namespace != ns {
				continue
			}
			for _, v := range p.VolumeStats {
				if v.Name == "data" && v.PVCRef != nil && v.PVCRef.Name == "data" && v.UsedBytes != nil && *v.UsedBytes > 0 && v.CapacityBytes != nil && *v.CapacityBytes > 0 {
					return true, nil
				}
			}
			return false, fmt.Errorf("writer's volume stats %+v", p.VolumeStats)
		}
		return false, fmt.Errorf("no stats for the writer")
	})

	took := deletePodAndWait(t, n, ns, "writer", 30*time.Second)
	t.Logf("writer deleted in %v", took.Round(time.Millisecond))
	if isMounted(target) || isMounted(global) {
		t.Fatalf("after deletion: published %v, staged %v", isMounted(target), isMounted(global))
	}
	if _, err := os.Stat(filepath.Dir(global)); !os.IsNotExist(err) {
		t.Errorf("global directory left after unstaging: %v", err)
	}

	reader := podWithClaim(n.NodeName, "reader", "data", "cat", "/data/file")
	reader.Spec.RestartPolicy = v1.RestartPolicyNever
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stage = time.Now()
	r := waitPod(t, n.client, ns, "reader", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	t.Logf("reader succeeded after %v", time.Since(stage).Round(time.Millisecond))
	eventually(t, 10*time.Second, "reader's log", func() (bool, error) {
		data, err := podLog(ns, r, "main")
		return strings.Contains(data, "hello-from-writer"), err
	})
	// A pod that completed has its volumes unmounted, as upstream.
	_, rtarget := csiPaths(n.RootDir, c.name, pv.Spec.CSI.VolumeHandle, string(r.UID), pv.Name)
	eventually(t, 20*time.Second, "completed pod's volume unpublished and unstaged", func() (bool, error) {
		return !isMounted(rtarget) && !isMounted(global), nil
	})
}

// A generic ephemeral volume (the claim kube-controller-manager creates
// from the template, owned by the pod) and a CSI inline ephemeral volume,
// whose driver gets the pod's information (podInfoOnMount).
func TestCSIEphemeralVolumes(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	sc := c.storageClass()
	p := podOn(n.NodeName, "eph", "sh", "-c", "cat /inline/volume-context; echo scratch > /scratch/f && echo wrote-scratch; sleep 3600")
	p.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
			Spec: claim("", sc, "8Mi").Spec}}}},
		{Name: "inline", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: c.name, VolumeAttributes: map[string]string{"color": "blue"}}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "inline", MountPath: "/inline"}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "eph", "running", podRunning)
	eventually(t, 10*time.Second, "the inline volume's context and a write to the ephemeral claim", func() (bool, error) {
		data, err := podLog(ns, got, "main")
		for _, want := range []string{"color=blue", "csi.storage.k8s.io/pod.name=eph", "csi.storage.k8s.io/pod.namespace=" + ns,
			"csi.storage.k8s.io/pod.uid=" + string(got.UID), "csi.storage.k8s.io/ephemeral=true", "wrote-scratch"} {
			if !strings.Contains(data, want) {
				return false, fmt.Errorf("log %q lacks %q (%v)", data, want, err)
			}
		}
		return true, nil
	})
	pvc, err := n.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "eph-scratch", metav1.GetOptions{})
	if err != nil || len(pvc.OwnerReferences) != 1 || pvc.OwnerReferences[0].UID != got.UID {
		t.Fatalf("ephemeral claim %v (%v)", pvc, err)
	}
	_, inline := csiPaths(n.RootDir, c.name, "", string(got.UID), "inline")
	if !isMounted(inline) {
		t.Fatalf("inline volume not published at %s", inline)
	}
	deletePodAndWait(t, n, ns, "eph", 30*time.Second)
	if m := mountsUnder(filepath.Join(n.RootDir, "pods")); len(m) != 0 {
		t.Fatalf("mounts left after deletion: %v", m)
	}
}

// Statically bound volumes: a local PersistentVolume (bind-mounted into the
// pod) and a hostPath one, the latter through a read-only claim.
func TestStaticLocalAndHostPathVolumes(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	localDir, hostDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(localDir, "in"), []byte("from-local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	class := "static-" + randHex(3)
	affinity := &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{n.NodeName}}}}}}}
	pvs := []*v1.PersistentVolume{
		{ObjectMeta: metav1.ObjectMeta{Name: "local-" + randHex(4)}, Spec: v1.PersistentVolumeSpec{StorageClassName: class, NodeAffinity: affinity,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, Capacity: v1.ResourceList{v1.ResourceStorage: resourceQty("1Mi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: localDir}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hostpath-" + randHex(4)}, Spec: v1.PersistentVolumeSpec{StorageClassName: class,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, Capacity: v1.ResourceList{v1.ResourceStorage: resourceQty("1Mi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}}},
	}
	for i, pv := range pvs {
		if _, err := n.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.client.CoreV1().PersistentVolumes().Delete(ctxT(t), pv.Name, metav1.DeleteOptions{}) })
		pvc := claim([]string{"local", "hp"}[i], class, "1Mi")
		pvc.Spec.VolumeName = pv.Name
		if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		boundVolume(t, n, ns, pvc.Name)
	}
	p := podOn(n.NodeName, "static", "sh", "-c", "cat /local/in; echo out > /local/out; touch /hp/x 2>/dev/null || echo hp-read-only; sleep 3600")
	p.Spec.Volumes = []v1.Volume{
		{Name: "local", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "local"}}},
		{Name: "hp", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "hp", ReadOnly: true}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "local", MountPath: "/local"}, {Name: "hp", MountPath: "/hp"}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "static", "running", podRunning)
	eventually(t, 10*time.Second, "reads and writes through the volumes", func() (bool, error) {
		data, err := podLog(ns, got, "main")
		out, _ := readFile(filepath.Join(localDir, "out"))
		return strings.Contains(data, "from-local") && strings.Contains(data, "hp-read-only") && out == "out\n", fmt.Errorf("log %q out %q (%v)", data, out, err)
	})
	localMount := filepath.Join(n.RootDir, "pods", string(got.UID), "volumes", "kubernetes.io~local-volume", pvs[0].Name)
	if !isMounted(localMount) {
		t.Fatalf("local volume not bind-mounted at %s", localMount)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "x")); err == nil {
		t.Fatal("a read-only claim's hostPath volume was written")
	}
	deletePodAndWait(t, n, ns, "static", 30*time.Second)
	if isMounted(localMount) {
		t.Fatal("local volume still mounted after the pod was deleted")
	}
}

// kill -9 of the kubelet with a CSI volume mounted: after the restart the
// pod keeps running (same container, no restart) and its volume stays; a
// pod deleted while the kubelet was down has its volume torn down; deleting
// the survivor then unpublishes and unstages its volume.
func TestCSIVolumeSurvivesKubeletKill(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	sc := c.storageClass()
	for _, name := range []string{"keep", "gone"} {
		if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim(name, sc, "8Mi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podWithClaim(n.NodeName, name, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	keep := waitPod(t, n.client, ns, "keep", "running", podRunning)
	gone := waitPod(t, n.client, ns, "gone", "running", podRunning)
	keepPV, gonePV := boundVolume(t, n, ns, "keep"), boundVolume(t, n, ns, "gone")
	keepGlobal, keepTarget := csiPaths(n.RootDir, c.name, keepPV.Spec.CSI.VolumeHandle, string(keep.UID), keepPV.Name)
	goneGlobal, goneTarget := csiPaths(n.RootDir, c.name, gonePV.Spec.CSI.VolumeHandle, string(gone.UID), gonePV.Name)
	containerID := keep.Status.ContainerStatuses[0].ContainerID

	n.Kill()
	killed := time.Now()
	zero := int64(0)
	if err := n.client.CoreV1().Pods(ns).Delete(ctx, "gone", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	n.Start()
	eventually(t, 60*time.Second, "volume of the pod deleted while the kubelet was down torn down", func() (bool, error) {
		return !isMounted(goneTarget) && !isMounted(goneGlobal), fmt.Errorf("published %v staged %v", isMounted(goneTarget), isMounted(goneGlobal))
	})
	// The survivor was not touched: same container, never restarted, its
	// volume never reported failing.
	p := waitPod(t, n.client, ns, "keep", "running and ready after the restart", podRunning)
	if p.Status.ContainerStatuses[0].ContainerID != containerID || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("survivor after restart: %+v", p.Status.ContainerStatuses)
	}
	for _, e := range podEvents(t, n, ns, "keep", "FailedMount") {
		if last := e.LastTimestamp.Time; last.After(killed) {
			t.Fatalf("FailedMount for the running pod after the restart: %v", e.Message)
		}
	}
	if !isMounted(keepTarget) || !isMounted(keepGlobal) {
		t.Fatalf("survivor's volume: published %v staged %v", isMounted(keepTarget), isMounted(keepGlobal))
	}
	deletePodAndWait(t, n, ns, "keep", 30*time.Second)
	if isMounted(keepTarget) || isMounted(keepGlobal) {
		t.Fatalf("after deleting the survivor: published %v staged %v", isMounted(keepTarget), isMounted(keepGlobal))
	}
}

// 20 pods with claims created and deleted leave no mount and no volume
// directory behind.
func TestCSIManyPodsLeaveNothing(t *testing.T) {
	const count = 20
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	sc := c.storageClass()
	start := time.Now()
	for i := range count {
		name := fmt.Sprintf("p%02d", i)
		if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim(name, sc, "1Mi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podWithClaim(n.NodeName, name, name, "sh", "-c", "echo $HOSTNAME > /data/host; sleep 3600"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 3*time.Minute, fmt.Sprintf("%d pods running", count), func() (bool, error) {
		pods, err := n.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for i := range pods.Items {
			if podRunning(&pods.Items[i]) {
				running++
			}
		}
		return running == count, fmt.Errorf("%d running", running)
	})
	t.Logf("%d pods with provisioned claims running after %v; mounts under the kubelet root: %d", count, time.Since(start).Round(time.Millisecond), len(mountsUnder(n.RootDir)))
	start = time.Now()
	if err := n.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "all pods deleted", func() (bool, error) {
		pods, err := n.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
	t.Logf("all deleted after %v", time.Since(start).Round(time.Millisecond))
	if m := mountsUnder(n.RootDir); len(m) != 0 {
		t.Fatalf("%d mounts left under the kubelet root: %v", len(m), m)
	}
	left, _ := filepath.Glob(filepath.Join(n.RootDir, "pods", "*", "volumes", "kubernetes.io~csi", "*"))
	global, _ := filepath.Glob(filepath.Join(n.RootDir, "plugins", "kubernetes.io", "csi", c.name, "*"))
	if len(left)+len(global) != 0 {
		t.Fatalf("volume directories left: %v %v", left, global)
	}
}

// Bad input leaves the pod waiting with upstream's reasons, its deletion
// still completes within its grace period, and other pods are untouched: a
// claim that never binds, a driver that is not there, a driver failing
// NodePublishVolume (the pod starts once it stops failing).
func TestCSIBadInput(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	bystander := podOn(n.NodeName, "bystander")
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, bystander, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	by := waitPod(t, n.client, ns, "bystander", "running", podRunning)

	// A claim of a class nobody provisions never binds.
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("unbound", "nobody-provisions-"+randHex(3), "1Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A volume of a driver that never registered (its CSIDriver exists).
	missing := "missing-" + randHex(3) + ".csi.seed.test"
	if _, err := n.client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: missing},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.client.StorageV1().CSIDrivers().Delete(context.Background(), missing, metav1.DeleteOptions{})
	})
	pvName := "nodriver-" + randHex(4)
	if _, err := n.client.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		StorageClassName: "manual", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, Capacity: v1.ResourceList{v1.ResourceStorage: resourceQty("1Mi")},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: missing, VolumeHandle: "h1"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	nodriver := claim("nodriver", "manual", "1Mi")
	nodriver.Spec.VolumeName = pvName
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, nodriver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	boundVolume(t, n, ns, "nodriver")
	// A driver that fails NodePublishVolume.
	if err := os.WriteFile(c.failRun, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sc := c.storageClass()
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("failing", sc, "1Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"unbound", "nodriver", "failing"} {
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podWithClaim(n.NodeName, name, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitEvent(t, n, ns, "unbound", "FailedMount", "error processing PVC "+ns+"/unbound: PVC is not bound")
	waitEvent(t, n, ns, "nodriver", "FailedMount", "driver name "+missing+" not found in the list of registered CSI drivers")
	waitEvent(t, n, ns, "failing", "FailedMount", "injected failure")
	// The status write may trail the event by a moment.
	for _, name := range []string{"unbound", "nodriver", "failing"} {
		waitPod(t, n.client, ns, name, "Pending in ContainerCreating", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodPending && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
		})
	}
	// The failing driver recovers: the pod starts (retried with back-off).
	os.Remove(c.failRun)
	waitPod(t, n.client, ns, "failing", "running once the driver stops failing", podRunning)
	for _, name := range []string{"unbound", "nodriver"} {
		if took := deletePodAndWait(t, n, ns, name, 30*time.Second); took > 4*time.Second {
			t.Errorf("deleting waiting pod %s took %v; want within its grace period (2s) + 2s", name, took)
		}
	}
	p, err := n.client.CoreV1().Pods(ns).Get(ctx, "bystander", metav1.GetOptions{})
	if err != nil || !podRunning(p) || p.Status.ContainerStatuses[0].ContainerID != by.Status.ContainerStatuses[0].ContainerID || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("bystander disturbed: %+v (%v)", p.Status, err)
	}
}

// A driver that dies in the middle of NodePublishVolume (after mounting):
// the kubelet retries with back-off, the pod runs once the driver is back,
// and nothing stays mounted after the pod is deleted.
func TestCSIDriverCrashMidPublish(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	sc := c.storageClass()
	if err := os.WriteFile(c.crashRun, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("data", sc, "1Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podWithClaim(n.NodeName, "victim", "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, n, ns, "victim", "FailedMount", "NodePublishVolume")
	eventually(t, 20*time.Second, "driver process gone", func() (bool, error) {
		cmd := c.procs["driver"]
		return cmd.ProcessState != nil || cmd.Process.Signal(syscall.Signal(0)) != nil, nil
	})
	c.stop("driver", true)
	os.Remove(c.crashRun)
	c.startDriver()
	got := waitPod(t, n.client, ns, "victim", "running once the driver is back", podRunning)
	pv := boundVolume(t, n, ns, "data")
	global, target := csiPaths(n.RootDir, c.name, pv.Spec.CSI.VolumeHandle, string(got.UID), pv.Name)
	if !isMounted(target) || !isMounted(global) {
		t.Fatalf("published %v staged %v", isMounted(target), isMounted(global))
	}
	deletePodAndWait(t, n, ns, "victim", 30*time.Second)
	if m := mountsUnder(n.RootDir); len(m) != 0 {
		t.Fatalf("mounts left: %v", m)
	}
}

// A driver whose volumes need attaching (attachRequired): the kubelet
// reports the volume in node.status.volumesInUse, waits for the
// attach/detach controller's volumesAttached and the VolumeAttachment, and
// mounts with the attachment's publish context; after the pod goes the
// volume leaves volumesInUse and is detached. When the registrar removes
// its socket the driver leaves the CSINode.
func TestCSIAttachAndDeregistration(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{attach: true})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	sc := c.storageClass()
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("data", sc, "1Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podWithClaim(n.NodeName, "attached", "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitPod(t, n.client, ns, "attached", "running", podRunning)
	t.Logf("pod with an attached volume running after %v", time.Since(start).Round(time.Millisecond))
	pv := boundVolume(t, n, ns, "data")
	unique := v1.UniqueVolumeName("kubernetes.io/csi/" + c.name + "^" + pv.Spec.CSI.VolumeHandle)
	nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inUse := false
	for _, v := range nd.Status.VolumesInUse {
		inUse = inUse || v == unique
	}
	if !inUse || len(nd.Status.VolumesAttached) == 0 {
		t.Fatalf("node status: volumesInUse %v volumesAttached %v", nd.Status.VolumesInUse, nd.Status.VolumesAttached)
	}
	deletePodAndWait(t, n, ns, "attached", 30*time.Second)
	eventually(t, 60*time.Second, "volume out of volumesInUse and detached", func() (bool, error) {
		nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(nd.Status.VolumesInUse) == 0 && len(nd.Status.VolumesAttached) == 0, fmt.Errorf("in use %v attached %v", nd.Status.VolumesInUse, nd.Status.VolumesAttached)
	})

	c.stop("registrar", false) // removes its socket
	eventually(t, 20*time.Second, "driver gone from the CSINode and the node annotation", func() (bool, error) {
		cn, err := n.client.StorageV1().CSINodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nd, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(cn.Spec.Drivers) == 0 && !strings.Contains(nd.Annotations["csi.volume.kubernetes.io/nodeid"], c.name), fmt.Errorf("drivers %v", cn.Spec.Drivers)
	})
}

// A volumeMode Block claim: the driver stages and publishes a device, the
// kubelet maps it into the container at the volumeDevice's path.
func TestCSIBlockVolume(t *testing.T) {
	n := joinNode(t)
	n.Start()
	c := startCSI(t, n, csiOpts{})
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	c.waitRegistered()
	sc := c.storageClass()
	pvc := claim("raw", sc, "4Mi")
	pvc.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	if _, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := podOn(n.NodeName, "block", "sh", "-c", "echo block-data | dd of=/dev/xvda conv=fsync 2>/dev/null && head -c 10 /dev/xvda && echo && echo size=$(wc -c < /dev/xvda); sleep 3600")
	p.Spec.Volumes = []v1.Volume{{Name: "raw", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "raw"}}}}
	p.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "block", "running", podRunning)
	eventually(t, 20*time.Second, "the container reads and writes the device", func() (bool, error) {
		data, err := podLog(ns, got, "main")
		return strings.Contains(data, "block-data") && strings.Contains(data, fmt.Sprintf("size=%d", 4<<20)), fmt.Errorf("log %q (%v)", data, err)
	})
	pv := boundVolume(t, n, ns, "raw")
	link := filepath.Join(n.RootDir, "pods", string(got.UID), "volumeDevices", "kubernetes.io~csi", pv.Name)
	if target, err := os.Readlink(link); err != nil || !isMounted(target) {
		t.Fatalf("device link %s -> %s (%v)", link, target, err)
	}
	deletePodAndWait(t, n, ns, "block", 30*time.Second)
	if m := mountsUnder(n.RootDir); len(m) != 0 {
		t.Fatalf("mounts left: %v", m)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatalf("device link left: %v", err)
	}
}
