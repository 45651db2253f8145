package smp

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/randfill"
)

// agree checks the property for one old → new pair of objects of typ's
// type: our patch is byte for byte the library's, and the library applies
// ours (as the API server does) to the same object as its own. It reports
// whether both generators (or both patches' application) refused the
// pair, and whether the applied patch
// gave new back (the library's patches do not always: a merge list of
// scalars reordered into sorted order, or duplicate keys, are lost).
func agree(t testing.TB, oldObj, newObj, typ any) (refused, roundTrip bool) {
	t.Helper()
	oldJSON, newJSON := mustJSON(t, oldObj), mustJSON(t, newObj)
	ours, ourErr := CreateTwoWayMergePatch(oldJSON, newJSON, typ)
	lib, libErr := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, typ)
	if (ourErr != nil) != (libErr != nil) {
		t.Fatalf("errors differ: ours %v, library %v\nold %s\nnew %s", ourErr, libErr, oldJSON, newJSON)
	}
	if ourErr != nil {
		return true, false
	}
	if string(ours) != string(lib) {
		t.Fatalf("patches differ\n ours %s\n  lib %s\nold %s\nnew %s", ours, lib, oldJSON, newJSON)
	}
	applied, err := strategicpatch.StrategicMergePatch(oldJSON, ours, typ)
	libApplied, libErr := strategicpatch.StrategicMergePatch(oldJSON, lib, typ)
	if (err != nil) != (libErr != nil) {
		t.Fatalf("applying ours: %v, the library's: %v", err, libErr)
	}
	if err != nil {
		// Duplicate merge keys (invalid objects) the library cannot
		// apply its own patch for.
		return true, false
	}
	if string(applied) != string(libApplied) {
		t.Fatalf("applied patches differ\n ours %s\n  lib %s", applied, libApplied)
	}
	got := reflect.New(reflect.TypeOf(typ)).Interface()
	if err := json.Unmarshal(applied, got); err != nil {
		t.Fatal(err)
	}
	want := reflect.New(reflect.TypeOf(typ)).Interface()
	if err := json.Unmarshal(newJSON, want); err != nil {
		t.Fatal(err)
	}
	return false, apiequality.Semantic.DeepEqual(got, want)
}

// checkRoundTrips fails when fewer than min of n pairs came back whole.
func checkRoundTrips(t *testing.T, ok, n, min int) {
	t.Helper()
	t.Logf("%d of %d patches gave the new object back", ok, n)
	if ok < min {
		t.Errorf("only %d of %d patches gave the new object back, want at least %d", ok, n, min)
	}
}

// TestPodStatusPatchesAgree: the pod status patch as the status manager
// sends it, for generated statuses and their edits.
func TestPodStatusPatchesAgree(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ok := 0
	const n = 3000
	for i := 0; i < n; i++ {
		old := genPodStatus(r)
		cur := genPodStatus(r)
		if i%3 != 0 {
			cur = editPodStatus(r, old)
		}
		if _, back := agree(t, v1.Pod{Status: old}, v1.Pod{Status: cur}, v1.Pod{}); back {
			ok++
		}
	}
	// Pod statuses have no scalar merge lists: every patch must come back.
	checkRoundTrips(t, ok, n, n)
}

// TestNodePatchesAgree: node objects (metadata and status) as the node
// status updater diffs them.
func TestNodePatchesAgree(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	ok := 0
	const n = 3000
	for i := 0; i < n; i++ {
		old := genNode(r)
		cur := genNode(r)
		if i%3 != 0 {
			cur = editNode(r, old)
		}
		if _, back := agree(t, old, cur, v1.Node{}); back {
			ok++
		}
	}
	// Finalizers reordered into sorted order are lost by the library too.
	checkRoundTrips(t, ok, n, n*9/10)
}

// TestWholeObjectPatchesAgree fills every field of whole Pods and Nodes
// (spec included: containers, ports, env and volumes merge by key, volumes
// retain keys) and blends an old object with a fresh one field by field and
// element by element, so elements match by key with some fields changed.
func TestWholeObjectPatchesAgree(t *testing.T) {
	for _, typ := range []any{v1.Pod{}, v1.Node{}} {
		t.Run(reflect.TypeOf(typ).Name(), func(t *testing.T) {
			r := rand.New(rand.NewSource(3))
			f := filler(r)
			refused, ok := 0, 0
			const n = 300
			for i := 0; i < n; i++ {
				old := reflect.New(reflect.TypeOf(typ))
				fresh := reflect.New(reflect.TypeOf(typ))
				f.Fill(old.Interface())
				f.Fill(fresh.Interface())
				cur := reflect.New(reflect.TypeOf(typ))
				cur.Elem().Set(blend(r, old.Elem(), fresh.Elem()))
				switch r, back := agree(t, old.Interface(), cur.Interface(), typ); {
				case r:
					refused++
				case back:
					ok++
				}
			}
			t.Logf("%d of %d pairs refused by both, %d came back whole", refused, n, ok)
			if refused > n/4 {
				t.Errorf("%d of %d pairs refused by both: the generator tests too little", refused, n)
			}
		})
	}
}

// FuzzPodStatusPatch drives the pod status generator from fuzz input.
func FuzzPodStatusPatch(f *testing.F) {
	for _, s := range []int64{0, 1, 42, 1 << 40} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, seed int64, edit bool) {
		r := rand.New(rand.NewSource(seed))
		old, cur := genPodStatus(r), genPodStatus(r)
		if edit {
			cur = editPodStatus(r, old)
		}
		agree(t, v1.Pod{Status: old}, v1.Pod{Status: cur}, v1.Pod{})
	})
}

// FuzzNodePatch drives the node generator from fuzz input.
func FuzzNodePatch(f *testing.F) {
	for _, s := range []int64{0, 7, 1 << 33} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, seed int64, edit bool) {
		r := rand.New(rand.NewSource(seed))
		old, cur := genNode(r), genNode(r)
		if edit {
			cur = editNode(r, old)
		}
		agree(t, old, cur, v1.Node{})
	})
}

// --- realistic generators ---

var (
	podConditions  = []v1.PodConditionType{v1.PodScheduled, v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.DisruptionTarget, "example.com/gate"}
	nodeConditions = []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeNetworkUnavailable}
	ips            = []string{"10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2", "192.168.1.7"}
	words          = []string{"a", "b", "c", "kubernetes.io/os", "node-role", "x", "zz", "1", "10", "2"}
	baseTime       = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func pick[T any](r *rand.Rand, l []T) T { return l[r.Intn(len(l))] }

// subset is a random subset of l in random order.
func subset[T any](r *rand.Rand, l []T) []T {
	var out []T
	for _, i := range r.Perm(len(l)) {
		if r.Intn(2) == 0 {
			out = append(out, l[i])
		}
	}
	return out
}

func ts(r *rand.Rand) metav1.Time {
	return metav1.NewTime(baseTime.Add(time.Duration(r.Intn(5)) * time.Second))
}

func status(r *rand.Rand) v1.ConditionStatus {
	return pick(r, []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown})
}

func genPodCondition(r *rand.Rand, typ v1.PodConditionType) v1.PodCondition {
	c := v1.PodCondition{Type: typ, Status: status(r), LastTransitionTime: ts(r)}
	if r.Intn(3) == 0 {
		c.Reason, c.Message = pick(r, words), pick(r, words)
	}
	if r.Intn(4) == 0 {
		c.LastProbeTime = ts(r)
	}
	return c
}

func genContainerStatus(r *rand.Rand, name string) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: name, Image: "img:" + pick(r, words), ImageID: pick(r, words), Ready: r.Intn(2) == 0, RestartCount: int32(r.Intn(3))}
	switch r.Intn(3) {
	case 0:
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case 1:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: ts(r)}
	default:
		cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(r.Intn(2)), Reason: "Completed", StartedAt: ts(r), FinishedAt: ts(r)}
	}
	if r.Intn(3) == 0 {
		cs.AllocatedResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse(pick(r, []string{"100m", "1", "2"}))}
	}
	return cs
}

func genPodStatus(r *rand.Rand) v1.PodStatus {
	s := v1.PodStatus{Phase: pick(r, []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, ""})}
	for _, c := range subset(r, podConditions) {
		s.Conditions = append(s.Conditions, genPodCondition(r, c))
	}
	for _, ip := range subset(r, ips) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	for _, ip := range subset(r, ips[:2]) {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
	}
	for _, n := range subset(r, []string{"app", "sidecar", "init"}) {
		s.ContainerStatuses = append(s.ContainerStatuses, genContainerStatus(r, n))
	}
	for _, n := range subset(r, []string{"gpu", "fpga"}) {
		rc := v1.PodResourceClaimStatus{Name: n}
		if r.Intn(2) == 0 {
			name := "claim-" + pick(r, words)
			rc.ResourceClaimName = &name
		}
		s.ResourceClaimStatuses = append(s.ResourceClaimStatuses, rc)
	}
	if r.Intn(2) == 0 {
		st := ts(r)
		s.StartTime = &st
	}
	if r.Intn(3) == 0 {
		s.Reason, s.Message = "Evicted", pick(r, words)
	}
	if r.Intn(4) == 0 {
		s.NominatedNodeName = pick(r, words)
	}
	s.QOSClass = pick(r, []v1.PodQOSClass{v1.PodQOSBestEffort, v1.PodQOSBurstable, ""})
	return s
}

// editPodStatus makes the small changes the status manager sends.
func editPodStatus(r *rand.Rand, old v1.PodStatus) v1.PodStatus {
	s := *old.DeepCopy()
	for n := r.Intn(4) + 1; n > 0; n-- {
		switch r.Intn(9) {
		case 0:
			s.Phase = pick(r, []v1.PodPhase{v1.PodRunning, v1.PodSucceeded, v1.PodFailed})
		case 1:
			if len(s.Conditions) > 0 {
				i := r.Intn(len(s.Conditions))
				s.Conditions[i].Status, s.Conditions[i].LastTransitionTime = status(r), ts(r)
			}
		case 2:
			if len(s.Conditions) > 0 {
				i := r.Intn(len(s.Conditions))
				s.Conditions = append(s.Conditions[:i], s.Conditions[i+1:]...)
			}
		case 3:
			have := map[v1.PodConditionType]bool{}
			for _, c := range s.Conditions {
				have[c.Type] = true
			}
			for _, c := range podConditions {
				if !have[c] {
					at := r.Intn(len(s.Conditions) + 1)
					s.Conditions = append(s.Conditions[:at], append([]v1.PodCondition{genPodCondition(r, c)}, s.Conditions[at:]...)...)
					break
				}
			}
		case 4:
			r.Shuffle(len(s.Conditions), func(i, j int) { s.Conditions[i], s.Conditions[j] = s.Conditions[j], s.Conditions[i] })
		case 5:
			if len(s.ContainerStatuses) > 0 {
				i := r.Intn(len(s.ContainerStatuses))
				s.ContainerStatuses[i] = genContainerStatus(r, s.ContainerStatuses[i].Name)
			}
		case 6:
			s.PodIPs = nil
			for _, ip := range subset(r, ips) {
				s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
			}
		case 7:
			if len(s.ResourceClaimStatuses) > 0 {
				s.ResourceClaimStatuses[0].ResourceClaimName = nil
			}
		default:
			s.Message, s.Reason = pick(r, words), ""
		}
	}
	return s
}

func genNode(r *rand.Rand) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "u1", ResourceVersion: fmt.Sprint(r.Intn(9)), CreationTimestamp: metav1.NewTime(baseTime)}}
	if r.Intn(4) > 0 {
		n.Labels = map[string]string{}
		for _, w := range subset(r, words) {
			n.Labels[w] = pick(r, words)
		}
	}
	if r.Intn(2) == 0 {
		n.Annotations = map[string]string{}
		for _, w := range subset(r, words) {
			n.Annotations[w] = pick(r, words)
		}
	}
	n.Finalizers = subset(r, []string{"f/a", "f/b", "f/c"})
	for _, uid := range subset(r, []string{"o1", "o2"}) {
		n.OwnerReferences = append(n.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "X", Name: uid, UID: types.UID(uid)})
	}
	n.Spec.PodCIDR = pick(r, []string{"", "10.1.0.0/24"})
	for _, c := range subset(r, nodeConditions) {
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: c, Status: status(r), LastHeartbeatTime: ts(r), LastTransitionTime: ts(r), Reason: pick(r, words), Message: pick(r, words)})
	}
	for _, t := range subset(r, []v1.NodeAddressType{v1.NodeHostName, v1.NodeInternalIP, v1.NodeExternalIP}) {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: t, Address: pick(r, ips)})
	}
	n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse(pick(r, []string{"1", "2"})), v1.ResourcePods: resource.MustParse("110")}
	if r.Intn(2) == 0 {
		n.Status.Capacity[v1.ResourceMemory] = resource.MustParse(pick(r, []string{"1Gi", "2Gi"}))
	}
	n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	for _, img := range subset(r, words) {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{"img/" + img}, SizeBytes: int64(r.Intn(1000))})
	}
	n.Status.VolumesInUse = nil
	for _, v := range subset(r, []string{"kubernetes.io/csi/a", "kubernetes.io/csi/b"}) {
		n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(v))
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(pick(r, []int{0, 10250}))
	n.Status.NodeInfo = v1.NodeSystemInfo{KubeletVersion: pick(r, []string{"v1.36.0", "v1.36.1"}), OperatingSystem: "linux", Architecture: "amd64"}
	if r.Intn(2) == 0 {
		n.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr(r.Intn(2) == 0)}
	}
	for _, h := range subset(r, []string{"", "runc", "kata"}) {
		n.Status.RuntimeHandlers = append(n.Status.RuntimeHandlers, v1.NodeRuntimeHandler{Name: h, Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr(r.Intn(2) == 0)}})
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// editNode changes a node as the kubelet's setters do.
func editNode(r *rand.Rand, old *v1.Node) *v1.Node {
	n := old.DeepCopy()
	for k := r.Intn(4) + 1; k > 0; k-- {
		switch r.Intn(8) {
		case 0:
			if len(n.Status.Conditions) > 0 {
				i := r.Intn(len(n.Status.Conditions))
				n.Status.Conditions[i].LastHeartbeatTime = ts(r)
				n.Status.Conditions[i].Status = status(r)
			}
		case 1:
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[pick(r, words)] = pick(r, words)
			delete(n.Labels, pick(r, words))
		case 2:
			n.Status.Capacity[v1.ResourceCPU] = resource.MustParse(pick(r, []string{"3", "4"}))
		case 3:
			n.Status.Images = n.Status.Images[:len(n.Status.Images)/2]
		case 4:
			n.Finalizers = subset(r, []string{"f/a", "f/b", "f/c"})
		case 5:
			r.Shuffle(len(n.Status.Conditions), func(i, j int) {
				n.Status.Conditions[i], n.Status.Conditions[j] = n.Status.Conditions[j], n.Status.Conditions[i]
			})
		case 6:
			n.Annotations = nil
		default:
			n.Spec.PodCIDR = "10.9.0.0/24" // the updater resets the spec, but the generator may not
		}
	}
	return n
}

// --- whole-object fill and blend ---

func filler(r *rand.Rand) *randfill.Filler {
	return randfill.New().RandSource(r).NilChance(0.3).NumElements(0, 3).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Intn(100)), resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(baseTime.Add(time.Duration(c.Intn(1000)) * time.Second))
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(baseTime.Add(time.Duration(c.Intn(1000)) * time.Second))
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(fmt.Sprintf(`{"f:%d":{}}`, c.Intn(3)))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31n(100))
			} else {
				*v = intstr.FromString(pick(r, words))
			}
		},
		// Merge keys from small pools, so old and new elements match.
		func(s *string, c randfill.Continue) {
			*s = pick(r, words)
		},
	)
}

// blend builds a value from old and fresh: scalars from either, structs
// field by field, pointers and maps from either or blended, slices by
// keeping, dropping, blending or adding elements in a shuffled order.
func blend(r *rand.Rand, old, fresh reflect.Value) reflect.Value {
	out := reflect.New(old.Type()).Elem()
	switch old.Kind() {
	case reflect.Struct:
		if r.Intn(5) == 0 || old.Type() == reflect.TypeOf(resource.Quantity{}) || old.Type() == reflect.TypeOf(metav1.Time{}) {
			out.Set(pickValue(r, old, fresh))
			return out
		}
		for i := 0; i < old.NumField(); i++ {
			if out.Field(i).CanSet() {
				out.Field(i).Set(blend(r, old.Field(i), fresh.Field(i)))
			}
		}
	case reflect.Pointer:
		if old.IsNil() || fresh.IsNil() || r.Intn(3) == 0 {
			out.Set(pickValue(r, old, fresh))
			return out
		}
		p := reflect.New(old.Type().Elem())
		p.Elem().Set(blend(r, old.Elem(), fresh.Elem()))
		out.Set(p)
	case reflect.Slice:
		if old.Type().Elem().Kind() == reflect.Uint8 || r.Intn(4) == 0 {
			out.Set(pickValue(r, old, fresh))
			return out
		}
		l := reflect.MakeSlice(old.Type(), 0, old.Len()+fresh.Len())
		for i := 0; i < old.Len(); i++ {
			switch {
			case r.Intn(4) == 0: // dropped
			case i < fresh.Len() && r.Intn(2) == 0:
				l = reflect.Append(l, blend(r, old.Index(i), fresh.Index(i)))
			default:
				l = reflect.Append(l, old.Index(i))
			}
		}
		for i := 0; i < fresh.Len(); i++ {
			if r.Intn(3) == 0 {
				l = reflect.Append(l, fresh.Index(i))
			}
		}
		if r.Intn(3) == 0 {
			sw := reflect.Swapper(l.Interface())
			r.Shuffle(l.Len(), sw)
		}
		if l.Len() == 0 && r.Intn(2) == 0 {
			l = reflect.Zero(old.Type())
		}
		out.Set(l)
	default:
		out.Set(pickValue(r, old, fresh))
	}
	return out
}

func pickValue(r *rand.Rand, old, fresh reflect.Value) reflect.Value {
	if r.Intn(3) == 0 {
		return fresh
	}
	return old
}
