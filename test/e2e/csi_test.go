//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	pv := boundVolume(t, n, ns, "data")
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
	r := waitPod(t, n.client, ns, "reader", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
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
