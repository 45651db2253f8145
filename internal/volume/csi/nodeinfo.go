package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// AnnotationNodeID is the Node annotation holding a JSON map of driver name
// to the driver's node ID.
const AnnotationNodeID = "csi.volume.kubernetes.io/nodeid"

// MigratedPlugins are the in-tree plugins whose volumes CSI drivers serve
// (all migrations are complete in v1.36); the CSINode lists them in
// v1.MigratedPluginsAnnotationKey so the scheduler counts their volumes
// against the CSI drivers' limits.
var MigratedPlugins = []string{
	"kubernetes.io/aws-ebs", "kubernetes.io/azure-disk", "kubernetes.io/azure-file", "kubernetes.io/cinder",
	"kubernetes.io/gce-pd", "kubernetes.io/portworx-volume", "kubernetes.io/vsphere-volume",
}

// InstallDriverInCSINode puts the driver's entry into spec (replacing an
// older one) and reports whether spec changed; maxVolumes 0 means no
// allocatable count. It is pure.
func InstallDriverInCSINode(spec *storagev1.CSINodeSpec, driver, nodeID string, maxVolumes int64, topology map[string]string) bool {
	keys := make([]string, 0, len(topology))
	for k := range topology {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := storagev1.CSINodeDriver{Name: driver, NodeID: nodeID, TopologyKeys: keys}
	if maxVolumes > 0 {
		if maxVolumes > math.MaxInt32 {
			maxVolumes = math.MaxInt32
		}
		n := int32(maxVolumes)
		want.Allocatable = &storagev1.VolumeNodeResources{Count: &n}
	}
	out := make([]storagev1.CSINodeDriver, 0, len(spec.Drivers)+1)
	for _, d := range spec.Drivers {
		if d.Name != driver {
			out = append(out, d)
			continue
		}
		same := d.NodeID == nodeID && slices.Equal(sortedCopy(d.TopologyKeys), keys) && sameCount(d.Allocatable, want.Allocatable)
		if same {
			return false
		}
	}
	spec.Drivers = append(out, want)
	return true
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

func sameCount(a, b *storagev1.VolumeNodeResources) bool {
	ac, bc := a != nil && a.Count != nil, b != nil && b.Count != nil
	if ac != bc {
		return false
	}
	return !ac || *a.Count == *b.Count
}

// RemoveDriverFromCSINode drops the driver's entry and reports whether
// there was one. It is pure.
func RemoveDriverFromCSINode(spec *storagev1.CSINodeSpec, driver string) bool {
	n := len(spec.Drivers)
	spec.Drivers = slices.DeleteFunc(spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver })
	return len(spec.Drivers) != n
}

// SetNodeID updates the node ID annotation value (a JSON map) for driver;
// an empty nodeID removes the driver. It returns the new value ("" when the
// map is empty) and whether it changed. It is pure.
func SetNodeID(annotation, driver, nodeID string) (string, bool, error) {
	m := map[string]string{}
	if annotation != "" {
		if err := json.Unmarshal([]byte(annotation), &m); err != nil {
			return "", false, fmt.Errorf("failed to parse node's %q annotation value (%q) err=%v", AnnotationNodeID, annotation, err)
		}
	}
	if old, ok := m[driver]; (nodeID == "" && !ok) || (nodeID != "" && ok && old == nodeID) {
		return annotation, false, nil
	}
	if nodeID == "" {
		delete(m, driver)
	} else {
		m[driver] = nodeID
	}
	if len(m) == 0 {
		return "", true, nil
	}
	b, err := json.Marshal(m)
	return string(b), true, err
}

// TopologyLabels returns the labels to add to the Node for a driver's
// topology; a segment whose key is already a label with another value is
// an error, as upstream. It is pure.
func TopologyLabels(labels, topology map[string]string) (map[string]string, error) {
	add := map[string]string{}
	for k, v := range topology {
		cur, ok := labels[k]
		if ok && cur != v {
			return nil, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, v, k, cur)
		}
		if !ok {
			add[k] = v
		}
	}
	return add, nil
}

// NodeInfo keeps the CSINode object and the Node's CSI annotation and
// topology labels in step with the registered drivers.
type NodeInfo struct {
	client   kubeclient.Interface
	nodeName string
	clock    clock.Clock
	mu       sync.Mutex
}

// NewNodeInfo returns a NodeInfo for nodeName.
func NewNodeInfo(client kubeclient.Interface, nodeName string, clk clock.Clock) *NodeInfo {
	return &NodeInfo{client: client, nodeName: nodeName, clock: clk}
}

var _ NodeInfoInstaller = (*NodeInfo)(nil)

// InstallDriver records a registered driver: node ID annotation and
// topology labels on the Node, the driver's entry in the CSINode.
func (n *NodeInfo) InstallDriver(ctx context.Context, driver, nodeID string, maxVolumes int64, topology map[string]string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.patchNode(ctx, driver, nodeID, topology); err != nil {
		return fmt.Errorf("error updating Node object with CSI driver node info: %w", err)
	}
	err := n.updateCSINode(ctx, func(spec *storagev1.CSINodeSpec) bool {
		return InstallDriverInCSINode(spec, driver, nodeID, maxVolumes, topology)
	})
	if err != nil {
		return fmt.Errorf("error updating CSINode object with CSI driver node info: %w", err)
	}
	return nil
}

// UninstallDriver removes a driver that went away.
func (n *NodeInfo) UninstallDriver(ctx context.Context, driver string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.updateCSINode(ctx, func(spec *storagev1.CSINodeSpec) bool { return RemoveDriverFromCSINode(spec, driver) })
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("error uninstalling CSI driver from CSINode object %w", err)
	}
	if err := n.patchNode(ctx, driver, "", nil); err != nil {
		return fmt.Errorf("error removing CSI driver node info from Node object %w", err)
	}
	return nil
}

// patchNode sets (nodeID != "") or removes the driver's node ID and adds
// its topology labels, with a strategic merge patch of the metadata.
func (n *NodeInfo) patchNode(ctx context.Context, driver, nodeID string, topology map[string]string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		value, changed, err := SetNodeID(node.Annotations[AnnotationNodeID], driver, nodeID)
		if err != nil {
			return err
		}
		labels, err := TopologyLabels(node.Labels, topology)
		if err != nil {
			return err
		}
		if !changed && len(labels) == 0 {
			return nil
		}
		meta := map[string]any{"resourceVersion": node.ResourceVersion}
		if changed {
			var v any = value
			if value == "" {
				v = nil
			}
			meta["annotations"] = map[string]any{AnnotationNodeID: v}
		}
		if len(labels) > 0 {
			meta["labels"] = labels
		}
		data, err := json.Marshal(map[string]any{"metadata": meta})
		if err != nil {
			return err
		}
		_, err = n.client.CoreV1().Nodes().Patch(ctx, n.nodeName, types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	})
}

// updateCSINode applies change to the CSINode (created when missing) and
// writes it when change reports a difference.
func (n *NodeInfo) updateCSINode(ctx context.Context, change func(*storagev1.CSINodeSpec) bool) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cn, err := n.client.StorageV1().CSINodes().Get(ctx, n.nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cn, err = n.createCSINode(ctx)
		}
		if err != nil {
			return err
		}
		modified := setMigrationAnnotation(cn)
		if !change(&cn.Spec) && !modified {
			return nil
		}
		_, err = n.client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}

func (n *NodeInfo) createCSINode(ctx context.Context) (*storagev1.CSINode, error) {
	node, err := n.client.CoreV1().Nodes().Get(ctx, n.nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cn := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            n.nodeName,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	setMigrationAnnotation(cn)
	out, err := n.client.StorageV1().CSINodes().Create(ctx, cn, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return n.client.StorageV1().CSINodes().Get(ctx, n.nodeName, metav1.GetOptions{})
	}
	return out, err
}

// setMigrationAnnotation sets the migrated plugins annotation and reports
// whether it changed.
func setMigrationAnnotation(cn *storagev1.CSINode) bool {
	want := strings.Join(MigratedPlugins, ",")
	if cn.Annotations[v1.MigratedPluginsAnnotationKey] == want {
		return false
	}
	if cn.Annotations == nil {
		cn.Annotations = map[string]string{}
	}
	cn.Annotations[v1.MigratedPluginsAnnotationKey] = want
	return true
}

// Initialize creates (or annotates) the node's CSINode once its Node
// exists, retrying until ctx ends; upstream holds the Node NotReady ("CSINode
// is not yet initialized") until then. setErr receives the storage error
// to report, nil once done.
func (n *NodeInfo) Initialize(ctx context.Context, setErr func(error)) {
	setErr(fmt.Errorf("CSINode is not yet initialized"))
	delay := 15 * time.Millisecond
	for {
		n.mu.Lock()
		err := n.updateCSINode(ctx, func(*storagev1.CSINodeSpec) bool { return false })
		n.mu.Unlock()
		if err == nil {
			setErr(nil)
			klog.V(2).InfoS("CSINode initialized", "node", n.nodeName)
			return
		}
		klog.V(2).InfoS("Failed to initialize CSINode, will retry", "node", n.nodeName, "err", err, "after", delay)
		setErr(fmt.Errorf("failed to initialize CSINode: %w", err))
		select {
		case <-ctx.Done():
			return
		case <-n.clock.After(delay):
		}
		if delay < 10*time.Second {
			delay *= 6
		}
	}
}
