package nodestatus

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// MaxNamesPerImage is how many names of one image the status lists.
const MaxNamesPerImage = 5

// Condition reasons and messages, worded as upstream so alerts keep matching.
const (
	ReasonReady    = "KubeletReady"
	ReasonNotReady = "KubeletNotReady"
	MessageReady   = "kubelet is posting ready status"
)

type pressure struct {
	condition                 v1.NodeConditionType
	trueReason, trueMessage   string
	falseReason, falseMessage string
	trueEvent, falseEvent     string
	on                        func(Inputs) bool
}

// pressures are the pressure conditions, in the order they are listed.
var pressures = []pressure{
	{
		condition:  v1.NodeMemoryPressure,
		trueReason: "KubeletHasInsufficientMemory", trueMessage: "kubelet has insufficient memory available",
		falseReason: "KubeletHasSufficientMemory", falseMessage: "kubelet has sufficient memory available",
		trueEvent: "NodeHasInsufficientMemory", falseEvent: "NodeHasSufficientMemory",
		on: func(in Inputs) bool { return in.MemoryPressure },
	},
	{
		condition:  v1.NodeDiskPressure,
		trueReason: "KubeletHasDiskPressure", trueMessage: "kubelet has disk pressure",
		falseReason: "KubeletHasNoDiskPressure", falseMessage: "kubelet has no disk pressure",
		trueEvent: "NodeHasDiskPressure", falseEvent: "NodeHasNoDiskPressure",
		on: func(in Inputs) bool { return in.DiskPressure },
	},
	{
		condition:  v1.NodePIDPressure,
		trueReason: "KubeletHasInsufficientPID", trueMessage: "kubelet has insufficient PID available",
		falseReason: "KubeletHasSufficientPID", falseMessage: "kubelet has sufficient PID available",
		trueEvent: "NodeHasInsufficientPID", falseEvent: "NodeHasSufficientPID",
		on: func(in Inputs) bool { return in.PIDPressure },
	},
}

// SetStatus fills node.Status from in as of now: addresses, capacity and
// allocatable, nodeInfo, daemon endpoints, images, runtime handlers and
// features, declared features, and the MemoryPressure, DiskPressure,
// PIDPressure and Ready conditions (heartbeat now; transition time kept
// unless the status flipped), and volumesInUse when given. Fields and conditions owned by
// others (volumesAttached, extended resources, NetworkUnavailable, ...)
// are left alone.
func SetStatus(node *v1.Node, in Inputs, now time.Time) {
	setAddresses(node, in)
	setCapacity(node, in)
	setNodeInfo(node, in)
	node.Status.DaemonEndpoints = v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: in.KubeletPort}}
	node.Status.Images = nodeImages(in.Images, in.MaxImages)
	node.Status.RuntimeHandlers = slices.Clone(in.RuntimeHandlers)
	if in.Features != nil {
		node.Status.Features = in.Features.DeepCopy()
	}
	if in.DeclaredFeatures != nil {
		node.Status.DeclaredFeatures = nil
		if len(in.DeclaredFeatures) > 0 {
			node.Status.DeclaredFeatures = slices.Clone(in.DeclaredFeatures)
		}
	}
	if in.VolumesInUse != nil {
		node.Status.VolumesInUse = slices.Clone(in.VolumesInUse)
		if len(in.VolumesInUse) == 0 {
			node.Status.VolumesInUse = nil
		}
	}
	t := metav1.NewTime(now)
	for _, p := range pressures {
		setPressureCondition(node, p, p.on(in), t)
	}
	// Ready stays last: old clients read the last condition as readiness.
	setReadyCondition(node, in, t)
}

// setAddresses reports InternalIP per node IP and the Hostname, and keeps
// the external cloud provider's rules (cloud.go): the provided-node-ip
// annotation, and addresses the cloud controller manager set are left as
// they are.
func setAddresses(node *v1.Node, in Inputs) {
	setProvidedNodeIP(node, in)
	if cloudOwnsAddresses(node, in) {
		return
	}
	addrs := make([]v1.NodeAddress, 0, len(in.NodeIPs)+1)
	for _, ip := range in.NodeIPs {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	if in.Hostname != "" {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: in.Hostname})
	}
	node.Status.Addresses = addrs
}

// machineCapacity is the capacity measured on the machine (no pods).
func machineCapacity(m hostinfo.Machine) v1.ResourceList {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(m.NumCPU)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacity, resource.BinarySI),
	}
	// Zero means it could not be measured: leave it missing so the node
	// reports NotReady rather than a disk of no size.
	if m.EphemeralStorageCapacity > 0 {
		c[v1.ResourceEphemeralStorage] = *resource.NewQuantity(m.EphemeralStorageCapacity, resource.BinarySI)
	}
	for size, total := range m.HugePages {
		c[v1.ResourceName(v1.ResourceHugePagesPrefix+size)] = *resource.NewQuantity(total, resource.BinarySI)
	}
	return c
}

func podCapacity(in Inputs) int64 {
	pods := int64(in.MaxPods)
	if in.PodsPerCore > 0 {
		pods = min(pods, int64(in.Machine.NumCPU)*int64(in.PodsPerCore))
	}
	return pods
}

// setCapacity writes the measured capacity (other keys, such as extended
// resources, stay) and allocatable: capacity minus system and kube reserved
// and the hard eviction thresholds, never negative, with huge pages taken
// out of memory.
func setCapacity(node *v1.Node, in Inputs) {
	if node.Status.Capacity == nil {
		node.Status.Capacity = v1.ResourceList{}
	}
	machine := machineCapacity(in.Machine)
	for name, q := range machine {
		node.Status.Capacity[name] = q
	}
	node.Status.Capacity[v1.ResourcePods] = *resource.NewQuantity(podCapacity(in), resource.DecimalSI)

	if node.Status.Allocatable == nil {
		node.Status.Allocatable = v1.ResourceList{}
	}
	for name := range node.Status.Allocatable {
		if _, ok := node.Status.Capacity[name]; !ok && IsExtendedResourceName(name) {
			delete(node.Status.Allocatable, name)
		}
	}
	reserved := AllocatableReservation(machine, in.SystemReserved, in.KubeReserved, in.EvictionHard)
	for name, q := range node.Status.Capacity {
		v := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		node.Status.Allocatable[name] = v
	}
	for name, q := range node.Status.Capacity {
		if !IsHugePageResourceName(name) {
			continue
		}
		mem := node.Status.Allocatable[v1.ResourceMemory]
		mem.Sub(q)
		if mem.Sign() < 0 {
			mem.Set(0)
		}
		node.Status.Allocatable[v1.ResourceMemory] = mem
	}
}

// AllocatableReservation is what is held back from each machine resource:
// system reserved + kube reserved + the hard eviction threshold (memory for
// memory.available, ephemeral-storage for nodefs.available; a percentage
// is of the capacity). Resources with nothing held back are absent.
func AllocatableReservation(capacity, systemReserved, kubeReserved v1.ResourceList, evictionHard map[string]string) v1.ResourceList {
	eviction := hardEvictionReservation(evictionHard, capacity)
	out := v1.ResourceList{}
	for name := range capacity {
		if name == v1.ResourcePods {
			continue
		}
		sum := resource.NewQuantity(0, resource.DecimalSI)
		for _, list := range []v1.ResourceList{systemReserved, kubeReserved, eviction} {
			if q, ok := list[name]; ok {
				sum.Add(q)
			}
		}
		if !sum.IsZero() {
			out[name] = *sum
		}
	}
	return out
}

// hardEvictionReservation is what the hard memory.available and
// nodefs.available thresholds hold back of memory and ephemeral storage, a
// percentage of the capacity as upstream computes it. Thresholds config
// validation rejects count as none here.
func hardEvictionReservation(evictionHard map[string]string, capacity v1.ResourceList) v1.ResourceList {
	thresholds, _, err := evictionapi.ParseThresholds(evictionapi.ThresholdConfig{Hard: evictionHard})
	if err != nil {
		klog.V(2).InfoS("Hard eviction thresholds are invalid; reserving nothing for them", "err", err)
		return nil
	}
	out := v1.ResourceList{}
	for _, t := range thresholds {
		switch t.Signal {
		case evictionapi.SignalMemoryAvailable:
			out[v1.ResourceMemory] = t.Value.Amount(capacity[v1.ResourceMemory])
		case evictionapi.SignalNodeFsAvailable:
			out[v1.ResourceEphemeralStorage] = t.Value.Amount(capacity[v1.ResourceEphemeralStorage])
		}
	}
	return out
}

func setNodeInfo(node *v1.Node, in Inputs) {
	osName, arch := osArch(in)
	m := in.Machine
	info := &node.Status.NodeInfo
	info.MachineID = m.MachineID
	info.SystemUUID = m.SystemUUID
	info.BootID = m.BootID
	info.KernelVersion = m.KernelVersion
	info.OSImage = m.OSImage
	info.OperatingSystem = osName
	info.Architecture = arch
	info.ContainerRuntimeVersion = in.RuntimeVersion
	info.KubeletVersion = in.KubeletVersion
	// Deprecated and no longer reported by the kubelet.
	info.KubeProxyVersion = ""
	// The API server refuses a zero swap capacity: report swap only when
	// the machine has some, as upstream.
	info.Swap = nil
	if m.SwapCapacity > 0 {
		info.Swap = &v1.NodeSwapStatus{Capacity: ptr.To(m.SwapCapacity)}
	}
}

// nodeImages sorts images by size, largest first, keeps max of them (all
// when max < 0) and at most MaxNamesPerImage distinct names each.
func nodeImages(images []v1.ContainerImage, max int32) []v1.ContainerImage {
	sorted := slices.Clone(images)
	slices.SortStableFunc(sorted, func(a, b v1.ContainerImage) int { return cmp.Compare(b.SizeBytes, a.SizeBytes) })
	if max >= 0 && int(max) < len(sorted) {
		sorted = sorted[:max]
	}
	var out []v1.ContainerImage
	for _, img := range sorted {
		var names []string
		for _, n := range img.Names {
			if len(names) == MaxNamesPerImage {
				break
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: img.SizeBytes})
	}
	return out
}

func findCondition(node *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func setPressureCondition(node *v1.Node, p pressure, on bool, now metav1.Time) {
	c := findCondition(node, p.condition)
	if c == nil {
		node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: p.condition, Status: v1.ConditionUnknown})
		c = &node.Status.Conditions[len(node.Status.Conditions)-1]
	}
	c.LastHeartbeatTime = now
	want, reason, msg := v1.ConditionFalse, p.falseReason, p.falseMessage
	if on {
		want, reason, msg = v1.ConditionTrue, p.trueReason, p.trueMessage
	}
	if c.Status != want {
		c.Status, c.Reason, c.Message, c.LastTransitionTime = want, reason, msg, now
	}
}

// requiredCapacity must all be in capacity for the node to be Ready.
var requiredCapacity = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage}

// notReadyErrors lists why the node is not ready, in upstream's order.
func notReadyErrors(node *v1.Node, in Inputs) []error {
	var errs []error
	if in.RuntimeErr != nil {
		errs = append(errs, in.RuntimeErr)
	}
	if in.PLEGErr != nil {
		errs = append(errs, fmt.Errorf("PLEG is not healthy: %w", in.PLEGErr))
	}
	for _, err := range []error{in.NetworkErr, in.StorageErr, in.ShutdownErr} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var missing []string
	for _, name := range requiredCapacity {
		if _, ok := node.Status.Capacity[name]; !ok {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	return errs
}

func setReadyCondition(node *v1.Node, in Inputs, now metav1.Time) {
	want := v1.NodeCondition{
		Type: v1.NodeReady, Status: v1.ConditionTrue,
		Reason: ReasonReady, Message: MessageReady,
		LastHeartbeatTime: now, LastTransitionTime: now,
	}
	if agg := utilerrors.NewAggregate(notReadyErrors(node, in)); agg != nil {
		want.Status, want.Reason, want.Message = v1.ConditionFalse, ReasonNotReady, agg.Error()
	}
	c := findCondition(node, v1.NodeReady)
	if c == nil {
		node.Status.Conditions = append(node.Status.Conditions, want)
		return
	}
	if c.Status == want.Status {
		want.LastTransitionTime = c.LastTransitionTime
	}
	*c = want
}

// IsReady reports whether the status says Ready=True.
func IsReady(status v1.NodeStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// StatusChanged reports whether anything but the conditions' heartbeat
// times differs between two statuses.
func StatusChanged(old, cur v1.NodeStatus) bool {
	if conditionsChanged(old.Conditions, cur.Conditions) {
		return true
	}
	a, b := old.DeepCopy(), cur.DeepCopy()
	a.Conditions, b.Conditions = nil, nil
	return !apiequality.Semantic.DeepEqual(a, b)
}

func conditionsChanged(old, cur []v1.NodeCondition) bool {
	if len(old) != len(cur) {
		return true
	}
	a, b := slices.Clone(old), slices.Clone(cur)
	byType := func(s []v1.NodeCondition) func(i, j int) bool {
		return func(i, j int) bool { return s[i].Type < s[j].Type }
	}
	sort.SliceStable(a, byType(a))
	sort.SliceStable(b, byType(b))
	for i := range a {
		a[i].LastHeartbeatTime, b[i].LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !apiequality.Semantic.DeepEqual(a[i], b[i]) {
			return true
		}
	}
	return false
}

// ShouldReport decides whether a computed status goes to the API server:
// when it differs from the one there in more than heartbeat times, or when
// reportFreq has passed since the last report (a heartbeat the node
// lifecycle controller can see even without a Lease).
func ShouldReport(old, cur v1.NodeStatus, lastReport, now time.Time, reportFreq time.Duration) bool {
	return StatusChanged(old, cur) || !now.Before(lastReport.Add(reportFreq))
}
