package nodestatus

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

const (
	gi = int64(1) << 30
	mi = int64(1) << 20
)

func testInputs() Inputs {
	return Inputs{
		NodeName: "node-a",
		Hostname: "node-a",
		NodeIPs:  []string{"10.0.0.5"},
		Machine: hostinfo.Machine{
			MachineID: "mid", SystemUUID: "uuid", BootID: "boot-1",
			KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)",
			OperatingSystem: "linux", Architecture: "amd64",
			NumCPU: 4, MemoryCapacity: 8 * gi, SwapCapacity: 0,
			HugePages:                map[string]int64{"2Mi": 0, "1Gi": 0},
			EphemeralStorageCapacity: 100 * gi,
		},
		RuntimeVersion: "containerd://2.0.4",
		KubeletVersion: "v1.36.3",
		MaxImages:      50,
		MaxPods:        110,
		KubeletPort:    10250,
	}
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func TestSetStatusCapacityAndAllocatable(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*Inputs)
		capacity map[v1.ResourceName]resource.Quantity
		alloc    map[v1.ResourceName]resource.Quantity
	}{
		{
			name: "nothing reserved: allocatable is capacity",
			edit: func(*Inputs) {},
			capacity: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU: qty("4"), v1.ResourceMemory: qty("8Gi"), v1.ResourcePods: qty("110"),
				v1.ResourceEphemeralStorage: qty("100Gi"), "hugepages-2Mi": qty("0"), "hugepages-1Gi": qty("0"),
			},
			alloc: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU: qty("4"), v1.ResourceMemory: qty("8Gi"), v1.ResourcePods: qty("110"),
				v1.ResourceEphemeralStorage: qty("100Gi"),
			},
		},
		{
			name: "system and kube reserved, eviction and huge pages subtracted",
			edit: func(in *Inputs) {
				in.Machine.HugePages = map[string]int64{"2Mi": 512 * mi}
				in.SystemReserved = v1.ResourceList{v1.ResourceCPU: qty("500m"), v1.ResourceMemory: qty("512Mi")}
				in.KubeReserved = v1.ResourceList{v1.ResourceCPU: qty("250m"), v1.ResourceMemory: qty("256Mi"), v1.ResourceEphemeralStorage: qty("1Gi")}
				in.EvictionHard = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "imagefs.available": "15%"}
			},
			capacity: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU: qty("4"), v1.ResourceMemory: qty("8Gi"), "hugepages-2Mi": qty("512Mi"),
			},
			alloc: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU: qty("3250m"),
				// 8192Mi - 512Mi - 256Mi - 100Mi (eviction) - 512Mi (huge pages)
				v1.ResourceMemory: qty("6812Mi"),
				// 100Gi - 1Gi - 10% parsed as float32 upstream (10737418400, not 10737418240)
				v1.ResourceEphemeralStorage: *resource.NewQuantity(100*gi-gi-10737418400, resource.BinarySI),
				"hugepages-2Mi":             qty("512Mi"),
				v1.ResourcePods:             qty("110"),
			},
		},
		{
			name: "reservations larger than capacity floor at zero",
			edit: func(in *Inputs) {
				in.SystemReserved = v1.ResourceList{v1.ResourceCPU: qty("8"), v1.ResourceMemory: qty("16Gi")}
				in.Machine.HugePages = map[string]int64{"1Gi": 2 * gi}
			},
			alloc: map[v1.ResourceName]resource.Quantity{v1.ResourceCPU: qty("0"), v1.ResourceMemory: qty("0")},
		},
		{
			name: "0% and 100% thresholds are ignored, absolute nodefs counts",
			edit: func(in *Inputs) {
				in.EvictionHard = map[string]string{"memory.available": "100%", "nodefs.available": "5Gi"}
			},
			alloc: map[v1.ResourceName]resource.Quantity{v1.ResourceMemory: qty("8Gi"), v1.ResourceEphemeralStorage: qty("95Gi")},
		},
		{
			name:  "memory percentage threshold",
			edit:  func(in *Inputs) { in.EvictionHard = map[string]string{"memory.available": "50%"} },
			alloc: map[v1.ResourceName]resource.Quantity{v1.ResourceMemory: qty("4Gi")},
		},
		{
			name:     "pods per core caps max pods",
			edit:     func(in *Inputs) { in.PodsPerCore = 10 },
			capacity: map[v1.ResourceName]resource.Quantity{v1.ResourcePods: qty("40")},
			alloc:    map[v1.ResourceName]resource.Quantity{v1.ResourcePods: qty("40")},
		},
		{
			name:     "pods per core above max pods keeps max pods",
			edit:     func(in *Inputs) { in.PodsPerCore = 100 },
			capacity: map[v1.ResourceName]resource.Quantity{v1.ResourcePods: qty("110")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			tc.edit(&in)
			node := NewNode(in)
			SetStatus(node, in, time.Unix(100, 0))
			for name, want := range tc.capacity {
				got, ok := node.Status.Capacity[name]
				if !ok || got.Cmp(want) != 0 {
					t.Errorf("capacity[%s] = %v (present %v), want %v", name, &got, ok, &want)
				}
			}
			for name, want := range tc.alloc {
				got, ok := node.Status.Allocatable[name]
				if !ok || got.Cmp(want) != 0 {
					t.Errorf("allocatable[%s] = %v (present %v), want %v", name, &got, ok, &want)
				}
			}
		})
	}
}

func TestSetStatusKeepsForeignResources(t *testing.T) {
	in := testInputs()
	node := NewNode(in)
	node.Status.Capacity = v1.ResourceList{"example.com/dongle": qty("3")}
	node.Status.Allocatable = v1.ResourceList{"example.com/dongle": qty("3"), "example.com/gone": qty("1")}
	SetStatus(node, in, time.Unix(100, 0))
	if got := node.Status.Capacity["example.com/dongle"]; got.Cmp(qty("3")) != 0 {
		t.Errorf("extended capacity = %v, want 3", &got)
	}
	if got := node.Status.Allocatable["example.com/dongle"]; got.Cmp(qty("3")) != 0 {
		t.Errorf("extended allocatable = %v, want 3", &got)
	}
	if _, ok := node.Status.Allocatable["example.com/gone"]; ok {
		t.Error("allocatable kept an extended resource that has no capacity")
	}
}

func TestSetStatusVolumesInUse(t *testing.T) {
	attached := []v1.AttachedVolume{{Name: "kubernetes.io/csi/d^h1", DevicePath: ""}}
	cases := []struct {
		name   string
		before []v1.UniqueVolumeName
		in     []v1.UniqueVolumeName
		want   []v1.UniqueVolumeName
	}{
		{name: "not known yet: left alone", before: []v1.UniqueVolumeName{"kubernetes.io/csi/d^h0"}, want: []v1.UniqueVolumeName{"kubernetes.io/csi/d^h0"}},
		{name: "reported", in: []v1.UniqueVolumeName{"kubernetes.io/csi/d^h1"}, want: []v1.UniqueVolumeName{"kubernetes.io/csi/d^h1"}},
		{name: "none any more", before: []v1.UniqueVolumeName{"kubernetes.io/csi/d^h1"}, in: []v1.UniqueVolumeName{}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			in.VolumesInUse = tc.in
			node := NewNode(in)
			node.Status.VolumesInUse = tc.before
			node.Status.VolumesAttached = attached
			SetStatus(node, in, time.Unix(100, 0))
			if !reflect.DeepEqual(node.Status.VolumesInUse, tc.want) {
				t.Errorf("volumesInUse = %v, want %v", node.Status.VolumesInUse, tc.want)
			}
			if !reflect.DeepEqual(node.Status.VolumesAttached, attached) {
				t.Errorf("volumesAttached (the attach/detach controller's) changed to %v", node.Status.VolumesAttached)
			}
		})
	}
}

func TestSetStatusInfoAddressesEndpoints(t *testing.T) {
	in := testInputs()
	in.NodeIPs = []string{"10.0.0.5", "fd00::5"}
	in.RuntimeHandlers = []v1.NodeRuntimeHandler{{Name: "runc"}}
	node := NewNode(in)
	node.Status.NodeInfo.KubeProxyVersion = "v1.29.0"
	SetStatus(node, in, time.Unix(100, 0))

	wantAddrs := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
		{Type: v1.NodeInternalIP, Address: "fd00::5"},
		{Type: v1.NodeHostName, Address: "node-a"},
	}
	if fmt.Sprint(node.Status.Addresses) != fmt.Sprint(wantAddrs) {
		t.Errorf("addresses = %v, want %v", node.Status.Addresses, wantAddrs)
	}
	info := node.Status.NodeInfo
	want := v1.NodeSystemInfo{
		MachineID: "mid", SystemUUID: "uuid", BootID: "boot-1", KernelVersion: "6.1.0",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://2.0.4",
		KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64",
	}
	info.Swap = nil
	if info != want {
		t.Errorf("nodeInfo = %+v, want %+v", info, want)
	}
	if s := node.Status.NodeInfo.Swap; s != nil {
		t.Errorf("swap = %+v, want none on a machine without swap (the API refuses capacity 0)", s)
	}
	if p := node.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 10250 {
		t.Errorf("kubelet port = %d, want 10250", p)
	}
	if len(node.Status.RuntimeHandlers) != 1 || node.Status.RuntimeHandlers[0].Name != "runc" {
		t.Errorf("runtime handlers = %+v", node.Status.RuntimeHandlers)
	}
}

func TestNodeImages(t *testing.T) {
	img := func(size int64, names ...string) v1.ContainerImage {
		return v1.ContainerImage{Names: names, SizeBytes: size}
	}
	images := []v1.ContainerImage{img(10, "small"), img(300, "big"), img(200, "mid-a"), img(200, "mid-b")}
	tests := []struct {
		name   string
		images []v1.ContainerImage
		max    int32
		want   []v1.ContainerImage
	}{
		{name: "sorted by size, largest first, ties keep order", images: images, max: 50,
			want: []v1.ContainerImage{img(300, "big"), img(200, "mid-a"), img(200, "mid-b"), img(10, "small")}},
		{name: "limited to max", images: images, max: 2,
			want: []v1.ContainerImage{img(300, "big"), img(200, "mid-a")}},
		{name: "-1 means no limit", images: images, max: -1,
			want: []v1.ContainerImage{img(300, "big"), img(200, "mid-a"), img(200, "mid-b"), img(10, "small")}},
		{name: "zero reports none", images: images, max: 0, want: nil},
		{name: "at most five distinct names",
			images: []v1.ContainerImage{img(1, "a", "a", "b", "c", "d", "e", "f")}, max: 50,
			want: []v1.ContainerImage{img(1, "a", "b", "c", "d", "e")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nodeImages(tc.images, tc.max)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("images = %v, want %v", got, tc.want)
			}
		})
	}
	if images[0].SizeBytes != 10 {
		t.Error("nodeImages reordered its input")
	}
}

func condition(t *testing.T, node *v1.Node, typ v1.NodeConditionType) v1.NodeCondition {
	t.Helper()
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %+v", typ, node.Status.Conditions)
	return v1.NodeCondition{}
}

func TestConditions(t *testing.T) {
	t0, t1 := time.Unix(1000, 0), time.Unix(1010, 0)
	down := errors.New("container runtime is down")
	plegErr := errors.New("pleg was last seen active 3m0s ago; threshold is 3m0s")
	tests := []struct {
		name           string
		first, second  func(*Inputs)
		status         v1.ConditionStatus
		reason         string
		message        string
		transitionedAt time.Time
	}{
		{name: "healthy stays ready, transition time kept",
			first: func(*Inputs) {}, second: func(*Inputs) {},
			status: v1.ConditionTrue, reason: ReasonReady, message: MessageReady, transitionedAt: t0},
		{name: "runtime down turns not ready",
			first: func(*Inputs) {}, second: func(in *Inputs) { in.RuntimeErr = down },
			status: v1.ConditionFalse, reason: ReasonNotReady, message: "container runtime is down", transitionedAt: t1},
		{name: "several reasons are joined",
			first: func(*Inputs) {}, second: func(in *Inputs) {
				in.RuntimeErr = down
				in.PLEGErr = plegErr
				in.NetworkErr = errors.New("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized")
			},
			status: v1.ConditionFalse, reason: ReasonNotReady,
			message: "[container runtime is down, PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s, " +
				"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized]",
			transitionedAt: t1},
		{name: "not ready to ready transitions",
			first: func(in *Inputs) { in.PLEGErr = plegErr }, second: func(*Inputs) {},
			status: v1.ConditionTrue, reason: ReasonReady, message: MessageReady, transitionedAt: t1},
		{name: "not ready message changes without a transition",
			first: func(in *Inputs) { in.RuntimeErr = down }, second: func(in *Inputs) { in.PLEGErr = plegErr },
			status: v1.ConditionFalse, reason: ReasonNotReady, message: "PLEG is not healthy: " + plegErr.Error(), transitionedAt: t0},
		{name: "storage unmeasured later keeps the capacity already reported",
			first: func(*Inputs) {}, second: func(in *Inputs) { in.Machine.EphemeralStorageCapacity = 0 },
			status: v1.ConditionTrue, reason: ReasonReady, message: MessageReady, transitionedAt: t0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			tc.first(&in)
			node := NewNode(in)
			SetStatus(node, in, t0)
			in = testInputs()
			tc.second(&in)
			SetStatus(node, in, t1)
			c := condition(t, node, v1.NodeReady)
			if c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("ready = %s %q %q, want %s %q %q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
			if !c.LastTransitionTime.Time.Equal(tc.transitionedAt) {
				t.Errorf("lastTransitionTime = %v, want %v", c.LastTransitionTime.Time, tc.transitionedAt)
			}
			if !c.LastHeartbeatTime.Time.Equal(t1) {
				t.Errorf("lastHeartbeatTime = %v, want %v", c.LastHeartbeatTime.Time, t1)
			}
			last := node.Status.Conditions[len(node.Status.Conditions)-1]
			if last.Type != v1.NodeReady {
				t.Errorf("last condition is %s, want Ready", last.Type)
			}
		})
	}
}

func TestMissingCapacityIsNotReady(t *testing.T) {
	in := testInputs()
	in.Machine.EphemeralStorageCapacity = 0
	node := NewNode(in)
	SetStatus(node, in, time.Unix(1, 0))
	c := condition(t, node, v1.NodeReady)
	if c.Status != v1.ConditionFalse || c.Message != "missing node capacity for resources: ephemeral-storage" {
		t.Errorf("ready = %s %q", c.Status, c.Message)
	}
}

func TestPressureConditions(t *testing.T) {
	t0, t1 := time.Unix(1000, 0), time.Unix(1010, 0)
	tests := []struct {
		name    string
		edit    func(*Inputs)
		typ     v1.NodeConditionType
		status  v1.ConditionStatus
		reason  string
		message string
		moved   bool
	}{
		{name: "memory fine", edit: func(*Inputs) {}, typ: v1.NodeMemoryPressure, status: v1.ConditionFalse,
			reason: "KubeletHasSufficientMemory", message: "kubelet has sufficient memory available"},
		{name: "disk fine", edit: func(*Inputs) {}, typ: v1.NodeDiskPressure, status: v1.ConditionFalse,
			reason: "KubeletHasNoDiskPressure", message: "kubelet has no disk pressure"},
		{name: "pid fine", edit: func(*Inputs) {}, typ: v1.NodePIDPressure, status: v1.ConditionFalse,
			reason: "KubeletHasSufficientPID", message: "kubelet has sufficient PID available"},
		{name: "memory pressure", edit: func(in *Inputs) { in.MemoryPressure = true }, typ: v1.NodeMemoryPressure,
			status: v1.ConditionTrue, reason: "KubeletHasInsufficientMemory", message: "kubelet has insufficient memory available", moved: true},
		{name: "disk pressure", edit: func(in *Inputs) { in.DiskPressure = true }, typ: v1.NodeDiskPressure,
			status: v1.ConditionTrue, reason: "KubeletHasDiskPressure", message: "kubelet has disk pressure", moved: true},
		{name: "pid pressure", edit: func(in *Inputs) { in.PIDPressure = true }, typ: v1.NodePIDPressure,
			status: v1.ConditionTrue, reason: "KubeletHasInsufficientPID", message: "kubelet has insufficient PID available", moved: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			node := NewNode(in)
			SetStatus(node, in, t0)
			tc.edit(&in)
			SetStatus(node, in, t1)
			c := condition(t, node, tc.typ)
			if c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("%s = %s %q %q, want %s %q %q", tc.typ, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
			wantTransition := t0
			if tc.moved {
				wantTransition = t1
			}
			if !c.LastTransitionTime.Time.Equal(wantTransition) || !c.LastHeartbeatTime.Time.Equal(t1) {
				t.Errorf("times = transition %v heartbeat %v, want %v and %v", c.LastTransitionTime.Time, c.LastHeartbeatTime.Time, wantTransition, t1)
			}
		})
	}
}

func TestForeignConditionsKept(t *testing.T) {
	in := testInputs()
	node := NewNode(in)
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated"}}
	SetStatus(node, in, time.Unix(5, 0))
	if got := condition(t, node, v1.NodeNetworkUnavailable); got.Reason != "RouteCreated" {
		t.Errorf("NetworkUnavailable = %+v", got)
	}
	if n := len(node.Status.Conditions); n != 5 {
		t.Errorf("%d conditions, want 5", n)
	}
}

func TestShouldReport(t *testing.T) {
	t0 := time.Unix(10000, 0)
	in := testInputs()
	base := NewNode(in)
	SetStatus(base, in, t0)
	heartbeatOnly := base.DeepCopy()
	SetStatus(heartbeatOnly, in, t0.Add(10*time.Second))
	reordered := base.DeepCopy()
	c := reordered.Status.Conditions
	c[0], c[1] = c[1], c[0]
	notReady := base.DeepCopy()
	in2 := in
	in2.RuntimeErr = errors.New("container runtime is down")
	SetStatus(notReady, in2, t0.Add(10*time.Second))
	moreImages := base.DeepCopy()
	moreImages.Status.Images = []v1.ContainerImage{{Names: []string{"x"}, SizeBytes: 1}}

	tests := []struct {
		name       string
		cur        *v1.Node
		lastReport time.Time
		now        time.Time
		want       bool
	}{
		{name: "only heartbeats changed, recently reported", cur: heartbeatOnly, lastReport: t0, now: t0.Add(time.Minute), want: false},
		{name: "only heartbeats changed, report frequency passed", cur: heartbeatOnly, lastReport: t0, now: t0.Add(5 * time.Minute), want: true},
		{name: "never reported", cur: heartbeatOnly, lastReport: time.Time{}, now: t0, want: true},
		{name: "conditions in another order are not a change", cur: reordered, lastReport: t0, now: t0.Add(time.Second), want: false},
		{name: "a condition changed", cur: notReady, lastReport: t0, now: t0.Add(time.Second), want: true},
		{name: "another field changed", cur: moreImages, lastReport: t0, now: t0.Add(time.Second), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShouldReport(base.Status, tc.cur.Status, tc.lastReport, tc.now, 5*time.Minute); got != tc.want {
				t.Errorf("ShouldReport = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatusEvents(t *testing.T) {
	in := testInputs()
	fresh := NewNode(in)
	SetStatus(fresh, in, time.Unix(1, 0))
	rebooted := fresh.DeepCopy()
	rebooted.Status.NodeInfo.BootID = "boot-2"
	notReady := fresh.DeepCopy()
	bad := in
	bad.RuntimeErr = errors.New("container runtime is down")
	bad.MemoryPressure = true
	SetStatus(notReady, bad, time.Unix(2, 0))

	reasons := func(evs []Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.Type+"/"+e.Reason)
		}
		return out
	}
	tests := []struct {
		name     string
		old, cur v1.NodeStatus
		want     []string
	}{
		{name: "registration", old: v1.NodeStatus{}, cur: fresh.Status,
			want: []string{"Normal/NodeHasSufficientMemory", "Normal/NodeHasNoDiskPressure", "Normal/NodeHasSufficientPID"}},
		{name: "nothing changed", old: fresh.Status, cur: fresh.Status, want: nil},
		{name: "reboot", old: fresh.Status, cur: rebooted.Status, want: []string{"Warning/Rebooted"}},
		{name: "memory pressure and not ready", old: fresh.Status, cur: notReady.Status,
			want: []string{"Normal/NodeHasInsufficientMemory", "Normal/NodeNotReady"}},
		{name: "ready again", old: notReady.Status, cur: fresh.Status,
			want: []string{"Normal/NodeHasSufficientMemory", "Normal/NodeReady"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := reasons(StatusEvents("node-a", tc.old, tc.cur))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
	if e := StatusEvents("node-a", fresh.Status, notReady.Status)[1]; e.Message != "Node node-a status is now: NodeNotReady" {
		t.Errorf("message = %q", e.Message)
	}
}

func TestHardEvictionReservation(t *testing.T) {
	const gi = int64(1 << 30)
	capacity := v1.ResourceList{
		v1.ResourceMemory:           *resource.NewQuantity(8*gi, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(100*gi, resource.BinarySI),
	}
	tests := []struct {
		name          string
		hard          map[string]string
		memory, disk  int64
		noReservation bool
	}{
		{name: "absolute memory", hard: map[string]string{"memory.available": "100Mi"}, memory: 100 * mi},
		// 10% as a float32 fraction, as upstream: not 858993459.
		{name: "percentages as upstream computes them", hard: map[string]string{"memory.available": "10%", "nodefs.available": "10%"},
			memory: 858993472, disk: 10737418400},
		{name: "0% and 100% disable", hard: map[string]string{"memory.available": "0%", "nodefs.available": "100%"}},
		{name: "other signals reserve nothing", hard: map[string]string{"imagefs.available": "15%", "nodefs.inodesFree": "5%"}},
		{name: "invalid thresholds reserve nothing", hard: map[string]string{"memory.available": "lots"}, noReservation: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := hardEvictionReservation(tc.hard, capacity)
			if tc.noReservation {
				if len(got) != 0 {
					t.Fatalf("reservation = %v, want none", got)
				}
				return
			}
			if q := got[v1.ResourceMemory]; q.Value() != tc.memory {
				t.Errorf("memory = %d, want %d", q.Value(), tc.memory)
			}
			if q := got[v1.ResourceEphemeralStorage]; q.Value() != tc.disk {
				t.Errorf("ephemeral-storage = %d, want %d", q.Value(), tc.disk)
			}
		})
	}
}
