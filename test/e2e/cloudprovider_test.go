//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	providedNodeIP     = "alpha.kubernetes.io/provided-node-ip"
)

func heartbeat(n *v1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

// With --cloud-provider=external the Node registers with the uninitialized
// taint and the provided-node-ip annotation. The test then plays the cloud
// controller manager: it sets the Node's addresses and providerID and
// removes the taint; the kubelet's later status updates leave all of them
// as the cloud controller set them.
func TestExternalCloudProvider(t *testing.T) {
	n := joinNode(t, "nodeStatusUpdateFrequency: 1s", "nodeStatusReportFrequency: 1s")
	n.ExtraArgs = append(n.ExtraArgs, "--cloud-provider", "external")
	n.Start()
	ctx := ctxT(t)
	nodes := n.client.CoreV1().Nodes()
	var nd *v1.Node
	eventually(t, 30*time.Second, "node registered", func() (bool, error) {
		var err error
		nd, err = nodes.Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil, err
	})
	var tainted bool
	for _, tn := range nd.Spec.Taints {
		if tn.Key == uninitializedTaint && tn.Value == "true" && tn.Effect == v1.TaintEffectNoSchedule {
			tainted = true
		}
	}
	if !tainted {
		t.Errorf("taints %v: want %s=true:NoSchedule", nd.Spec.Taints, uninitializedTaint)
	}
	if got := nd.Annotations[providedNodeIP]; got != "127.0.0.1" {
		t.Errorf("annotation %s = %q, want the --node-ip 127.0.0.1", providedNodeIP, got)
	}
	if got, want := fmt.Sprint(nd.Status.Addresses), fmt.Sprint([]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: n.NodeName}}); got != want {
		t.Errorf("bootstrap addresses %s, want %s", got, want)
	}

	// The cloud controller manager initialises the node. (Addresses on
	// loopback and from TEST-NET: nothing is sent to them.)
	providerID := "seed://e2e/" + n.NodeName
	var keep []v1.Taint
	for _, tn := range nd.Spec.Taints {
		if tn.Key != uninitializedTaint {
			keep = append(keep, tn)
		}
	}
	spec, _ := json.Marshal(map[string]any{"spec": map[string]any{"providerID": providerID, "taints": keep}})
	if _, err := nodes.Patch(ctx, n.NodeName, types.MergePatchType, spec, metav1.PatchOptions{}); err != nil {
		t.Fatalf("cloud controller: patch spec: %v", err)
	}
	ccm := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "127.0.0.1"},
		{Type: v1.NodeExternalIP, Address: "192.0.2.10"},
		{Type: v1.NodeInternalDNS, Address: n.NodeName + ".internal.example"},
		{Type: v1.NodeHostName, Address: n.NodeName},
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"addresses": ccm}})
	patched, err := nodes.Patch(ctx, n.NodeName, types.MergePatchType, status, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("cloud controller: patch addresses: %v", err)
	}
	since := heartbeat(patched)

	// Three heartbeats later (a status patch each, at 1s report frequency)
	// the cloud controller's work is intact.
	seen := 0
	last := since
	eventually(t, 30*time.Second, "three status updates after the cloud controller's", func() (bool, error) {
		cur, err := nodes.Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if hb := heartbeat(cur); hb.After(last) {
			seen++
			last = hb
		}
		nd = cur
		return seen >= 3, fmt.Errorf("%d updates seen", seen)
	})
	if got, want := fmt.Sprint(nd.Status.Addresses), fmt.Sprint(ccm); got != want {
		t.Errorf("addresses %s, want the cloud controller's %s", got, want)
	}
	if nd.Spec.ProviderID != providerID {
		t.Errorf("providerID %q, want %q", nd.Spec.ProviderID, providerID)
	}
	for _, tn := range nd.Spec.Taints {
		if tn.Key == uninitializedTaint {
			t.Errorf("taint %v back on the node", tn)
		}
	}
	if got := nd.Annotations[providedNodeIP]; got != "127.0.0.1" {
		t.Errorf("annotation %s = %q after updates", providedNodeIP, got)
	}
}
