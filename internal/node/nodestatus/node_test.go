package nodestatus

import (
	"fmt"
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewNode(t *testing.T) {
	defaults := map[string]string{
		"kubernetes.io/hostname": "node-a",
		"kubernetes.io/os":       "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
	}
	with := func(extra map[string]string) map[string]string {
		out := maps.Clone(defaults)
		maps.Copy(out, extra)
		return out
	}
	noSchedule := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	unschedulable := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		edit        func(*Inputs)
		labels      map[string]string
		taints      []v1.Taint
		annotations map[string]string
		providerID  string
		unsched     bool
	}{
		{name: "defaults", edit: func(*Inputs) {}, labels: defaults},
		{name: "node labels added and win over defaults",
			edit: func(in *Inputs) {
				in.Labels = map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "alias"}
			},
			labels: with(map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "alias"})},
		{name: "taints, provider ID and attach-detach annotation",
			edit: func(in *Inputs) {
				in.Taints = []v1.Taint{noSchedule}
				in.ProviderID = "aws:///eu-west-1a/i-123"
				in.ControllerAttachDetach = true
			},
			labels: defaults, taints: []v1.Taint{noSchedule}, providerID: "aws:///eu-west-1a/i-123",
			annotations: map[string]string{AnnotationControllerManagedAttachDetach: "true"}},
		{name: "unschedulable adds the unschedulable taint",
			edit:   func(in *Inputs) { in.Unschedulable = true; in.Taints = []v1.Taint{noSchedule} },
			labels: defaults, taints: []v1.Taint{noSchedule, unschedulable}, unsched: true},
		{name: "unschedulable taint not doubled",
			edit:   func(in *Inputs) { in.Unschedulable = true; in.Taints = []v1.Taint{unschedulable} },
			labels: defaults, taints: []v1.Taint{unschedulable}, unsched: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			tc.edit(&in)
			node := NewNode(in)
			if node.Name != "node-a" {
				t.Errorf("name = %q", node.Name)
			}
			if !maps.Equal(node.Labels, tc.labels) {
				t.Errorf("labels = %v, want %v", node.Labels, tc.labels)
			}
			if fmt.Sprint(node.Spec.Taints) != fmt.Sprint(tc.taints) {
				t.Errorf("taints = %v, want %v", node.Spec.Taints, tc.taints)
			}
			if !maps.Equal(node.Annotations, tc.annotations) {
				t.Errorf("annotations = %v, want %v", node.Annotations, tc.annotations)
			}
			if node.Spec.ProviderID != tc.providerID || node.Spec.Unschedulable != tc.unsched {
				t.Errorf("spec = %+v", node.Spec)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	registered := func(edit func(*v1.Node)) *v1.Node {
		in := testInputs()
		in.ControllerAttachDetach = true
		n := NewNode(in)
		SetStatus(n, in, time.Unix(100, 0))
		n.Labels["custom"] = "kept"
		if edit != nil {
			edit(n)
		}
		return n
	}
	tests := []struct {
		name    string
		node    *v1.Node
		edit    func(*Inputs)
		changed bool
		check   func(*testing.T, *v1.Node)
	}{
		{name: "up to date", node: registered(nil), changed: false},
		{name: "wrong arch label fixed, custom label kept",
			node:    registered(func(n *v1.Node) { n.Labels["kubernetes.io/arch"] = "arm64"; delete(n.Labels, "beta.kubernetes.io/os") }),
			changed: true,
			check: func(t *testing.T, n *v1.Node) {
				if n.Labels["kubernetes.io/arch"] != "amd64" || n.Labels["beta.kubernetes.io/os"] != "linux" || n.Labels["custom"] != "kept" {
					t.Errorf("labels = %v", n.Labels)
				}
			}},
		{name: "attach-detach turned off removes the annotation",
			node: registered(nil), edit: func(in *Inputs) { in.ControllerAttachDetach = false }, changed: true,
			check: func(t *testing.T, n *v1.Node) {
				if _, ok := n.Annotations[AnnotationControllerManagedAttachDetach]; ok {
					t.Errorf("annotation kept: %v", n.Annotations)
				}
			}},
		{name: "huge pages follow the machine",
			node: registered(func(n *v1.Node) {
				n.Status.Capacity["hugepages-32Mi"] = resource.MustParse("64Mi")
				n.Status.Allocatable["hugepages-32Mi"] = resource.MustParse("64Mi")
				n.Status.Capacity["hugepages-2Mi"] = resource.MustParse("4Mi")
			}),
			changed: true,
			check: func(t *testing.T, n *v1.Node) {
				if _, ok := n.Status.Capacity["hugepages-32Mi"]; ok {
					t.Error("vanished huge page size kept in capacity")
				}
				if _, ok := n.Status.Allocatable["hugepages-32Mi"]; ok {
					t.Error("vanished huge page size kept in allocatable")
				}
				if q := n.Status.Capacity["hugepages-2Mi"]; !q.IsZero() {
					t.Errorf("hugepages-2Mi = %v, want 0", &q)
				}
			}},
		{name: "extended resources zeroed when asked",
			node: registered(func(n *v1.Node) {
				n.Status.Capacity["example.com/gpu"] = resource.MustParse("2")
				n.Status.Allocatable["example.com/gpu"] = resource.MustParse("2")
			}),
			edit: func(in *Inputs) { in.ResetExtendedResources = true }, changed: true,
			check: func(t *testing.T, n *v1.Node) {
				c, a := n.Status.Capacity["example.com/gpu"], n.Status.Allocatable["example.com/gpu"]
				if !c.IsZero() || !a.IsZero() {
					t.Errorf("gpu = %v/%v, want 0/0", &c, &a)
				}
			}},
		{name: "extended resources kept otherwise",
			node: registered(func(n *v1.Node) {
				n.Status.Capacity["example.com/gpu"] = resource.MustParse("2")
				n.Status.Allocatable["example.com/gpu"] = resource.MustParse("2")
			}),
			changed: false},
		{name: "node without status gets capacity",
			node:    registered(func(n *v1.Node) { n.Status = v1.NodeStatus{} }),
			changed: true,
			check: func(t *testing.T, n *v1.Node) {
				if q := n.Status.Capacity[v1.ResourceCPU]; q.Cmp(resource.MustParse("4")) != 0 {
					t.Errorf("cpu = %v", &q)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs()
			in.ControllerAttachDetach = true
			if tc.edit != nil {
				tc.edit(&in)
			}
			if got := Reconcile(tc.node, in); got != tc.changed {
				t.Errorf("changed = %v, want %v", got, tc.changed)
			}
			if tc.check != nil {
				tc.check(t, tc.node)
			}
		})
	}
}

func TestEnsureOSArchLabels(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		changed bool
	}{
		{name: "present", labels: map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
		{name: "missing", labels: nil, changed: true},
		{name: "wrong", labels: map[string]string{"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64"}, changed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
			if got := ensureOSArchLabels(n, testInputs()); got != tc.changed {
				t.Errorf("changed = %v, want %v", got, tc.changed)
			}
			if n.Labels["kubernetes.io/os"] != "linux" || n.Labels["kubernetes.io/arch"] != "amd64" {
				t.Errorf("labels = %v", n.Labels)
			}
		})
	}
}

func TestResourceNameKinds(t *testing.T) {
	tests := []struct {
		name               v1.ResourceName
		extended, hugePage bool
	}{
		{name: "cpu"},
		{name: "hugepages-2Mi", hugePage: true},
		{name: "example.com/gpu", extended: true},
		{name: "kubernetes.io/something"},
		{name: "requests.example.com/gpu"},
	}
	for _, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			if got := IsExtendedResourceName(tc.name); got != tc.extended {
				t.Errorf("extended = %v", got)
			}
			if got := IsHugePageResourceName(tc.name); got != tc.hugePage {
				t.Errorf("huge page = %v", got)
			}
		})
	}
}
