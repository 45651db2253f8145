package nodestatus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func applyPatch(t *testing.T, old *v1.Node, patch []byte) *v1.Node {
	t.Helper()
	oldJSON, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(oldJSON, patch, v1.Node{})
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	var n v1.Node
	if err := json.Unmarshal(out, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestStatusPatch(t *testing.T) {
	in := testInputs()
	base := NewNode(in)
	SetStatus(base, in, time.Unix(100, 0))
	tests := []struct {
		name      string
		edit      func(*v1.Node)
		mustHave  []string
		mustLack  []string
		checkSpec bool
	}{
		{name: "heartbeat only", edit: func(n *v1.Node) {
			in := testInputs()
			SetStatus(n, in, time.Unix(200, 0))
		}, mustHave: []string{"lastHeartbeatTime"}, mustLack: []string{"addresses", "capacity"}},
		{name: "dual-stack addresses replace the list", edit: func(n *v1.Node) {
			in := testInputs()
			in.NodeIPs = []string{"10.0.0.6", "fd00::6"}
			SetStatus(n, in, time.Unix(100, 0))
		}, mustHave: []string{`"$patch":"replace"`, "fd00::6"}},
		{name: "spec changes never sent", edit: func(n *v1.Node) {
			n.Spec.Unschedulable = true
			n.Labels["kubernetes.io/os"] = "plan9"
		}, mustHave: []string{"plan9"}, mustLack: []string{"unschedulable"}, checkSpec: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.edit(cur)
			patch, err := StatusPatch(base, cur)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.mustHave {
				if !strings.Contains(string(patch), s) {
					t.Errorf("patch %s lacks %q", patch, s)
				}
			}
			for _, s := range tc.mustLack {
				if strings.Contains(string(patch), s) {
					t.Errorf("patch %s has %q", patch, s)
				}
			}
			got := applyPatch(t, base, patch)
			want := cur.DeepCopy()
			if tc.checkSpec {
				want.Spec = base.Spec
			}
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("patched node differs:\ngot  %+v\nwant %+v", got.Status.Addresses, want.Status.Addresses)
			}
		})
	}
}
