package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestPinPatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want []patchOp
	}{
		{"unscheduled, no selector", v1.PodSpec{},
			[]patchOp{{"add", "/spec/nodeSelector", map[string]string{hostnameLabel: "n1"}}}},
		{"unscheduled, other selector kept", v1.PodSpec{NodeSelector: map[string]string{"a": "b"}},
			[]patchOp{{"add", "/spec/nodeSelector/kubernetes.io~1hostname", "n1"}}},
		{"selector naming another node", v1.PodSpec{NodeSelector: map[string]string{hostnameLabel: "n2"}},
			[]patchOp{{"add", "/spec/nodeSelector/kubernetes.io~1hostname", "n1"}}},
		{"already selects the node", v1.PodSpec{NodeSelector: map[string]string{hostnameLabel: "n1"}}, nil},
		{"bound to the node", v1.PodSpec{NodeName: "n1"}, nil},
		{"bound to another node", v1.PodSpec{NodeName: "n2"},
			[]patchOp{{"replace", "/spec/nodeName", "n1"}}},
		{"affinity to another node", v1.PodSpec{NodeSelector: map[string]string{hostnameLabel: "n1"}, Affinity: affinity(v1.NodeSelectorOpIn, "n2")},
			[]patchOp{{"replace", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution", affinity(v1.NodeSelectorOpIn, "n1").NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}},
		{"affinity to the node", v1.PodSpec{NodeSelector: map[string]string{hostnameLabel: "n1"}, Affinity: affinity(v1.NodeSelectorOpIn, "n1")}, nil},
		{"anti-affinity left alone", v1.PodSpec{NodeSelector: map[string]string{hostnameLabel: "n1"}, Affinity: affinity(v1.NodeSelectorOpNotIn, "n2")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pinPatch(&v1.Pod{Spec: tc.spec}, "n1")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pinPatch = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// affinity is what the e2e framework's SetAffinity/SetAntiAffinity write.
func affinity(op v1.NodeSelectorOperator, node string) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: []string{node}}}},
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: hostnameLabel, Operator: op, Values: []string{node}}}},
		},
	}}}
}

func TestReview(t *testing.T) {
	raw, _ := json.Marshal(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	req := &admissionv1.AdmissionRequest{
		UID: "u1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		UserInfo: authenticationv1.UserInfo{Username: "alice"},
	}
	routes := map[string]string{"alice": "n1", "bob": "n2"}
	resp, ops, err := review(req, routes)
	if err != nil || !resp.Allowed || resp.UID != "u1" || len(ops) != 1 {
		t.Fatalf("review = %+v, %v, %v", resp, ops, err)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Errorf("patch type %v", resp.PatchType)
	}
	want := `[{"op":"add","path":"/spec/nodeSelector","value":{"kubernetes.io/hostname":"n1"}}]`
	if string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}

	req.UserInfo.Username = "carol"
	if resp, ops, err := review(req, routes); err == nil || !resp.Allowed || resp.Patch != nil || ops != nil {
		t.Errorf("unrouted user: %+v %v %v", resp, ops, err)
	}
	req.UserInfo.Username = "bob"
	if resp, _, _ := review(req, routes); !strings.Contains(string(resp.Patch), `"n2"`) {
		t.Errorf("bob's pod: patch %s, want node n2", resp.Patch)
	}

	req.Operation = admissionv1.Update
	if resp, ops, err := review(req, routes); err != nil || !resp.Allowed || resp.Patch != nil || ops != nil {
		t.Errorf("update: %+v %v %v", resp, ops, err)
	}
	req.Operation, req.Object.Raw = admissionv1.Create, []byte("{")
	if resp, _, err := review(req, routes); err == nil || !resp.Allowed {
		t.Errorf("bad object: allowed=%v err=%v", resp.Allowed, err)
	}
}
