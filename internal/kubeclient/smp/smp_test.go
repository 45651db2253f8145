package smp

import (
	"bytes"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// TestCreateTwoWayMergePatch pins the patches the kubelet's objects produce;
// every expectation is also checked against the library's output.
func TestCreateTwoWayMergePatch(t *testing.T) {
	cond := func(typ, status string) map[string]any {
		return map[string]any{"type": typ, "status": status}
	}
	pod := func(status map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"creationTimestamp": nil}, "spec": map[string]any{"containers": nil}, "status": status}
	}
	node := func(meta, status map[string]any) map[string]any {
		return map[string]any{"metadata": meta, "spec": map[string]any{}, "status": status}
	}
	for _, tc := range []struct {
		name     string
		typ      any
		old, new map[string]any
		want     string
	}{
		{"unchanged", v1.Pod{}, pod(map[string]any{"phase": "Running"}), pod(map[string]any{"phase": "Running"}), `{}`},
		{"phase", v1.Pod{}, pod(map[string]any{"phase": "Pending"}), pod(map[string]any{"phase": "Running"}), `{"status":{"phase":"Running"}}`},
		{"removed field is null", v1.Pod{}, pod(map[string]any{"phase": "Pending", "nominatedNodeName": "n"}), pod(map[string]any{"phase": "Pending"}),
			`{"status":{"nominatedNodeName":null}}`},
		{"first conditions are sent whole, without an order", v1.Pod{},
			pod(map[string]any{"phase": "Pending"}),
			pod(map[string]any{"phase": "Pending", "conditions": []any{cond("Ready", "False"), cond("Initialized", "True")}}),
			`{"status":{"conditions":[{"status":"False","type":"Ready"},{"status":"True","type":"Initialized"}]}}`},
		{"condition changed: merge by type with the order", v1.Pod{},
			pod(map[string]any{"conditions": []any{cond("Ready", "False"), cond("Initialized", "True")}}),
			pod(map[string]any{"conditions": []any{cond("Ready", "True"), cond("Initialized", "True")}}),
			`{"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"Initialized"}],"conditions":[{"status":"True","type":"Ready"}]}}`},
		{"condition added and removed: delete directive last", v1.Pod{},
			pod(map[string]any{"conditions": []any{cond("Ready", "False"), cond("Initialized", "True")}}),
			pod(map[string]any{"conditions": []any{cond("PodScheduled", "True"), cond("Ready", "False")}}),
			`{"status":{"$setElementOrder/conditions":[{"type":"PodScheduled"},{"type":"Ready"}],"conditions":[{"status":"True","type":"PodScheduled"},{"$patch":"delete","type":"Initialized"}]}}`},
		{"reordered conditions send only the order", v1.Pod{},
			pod(map[string]any{"conditions": []any{cond("Ready", "False"), cond("Initialized", "True")}}),
			pod(map[string]any{"conditions": []any{cond("Initialized", "True"), cond("Ready", "False")}}),
			`{"status":{"$setElementOrder/conditions":[{"type":"Initialized"},{"type":"Ready"}]}}`},
		{"all conditions removed", v1.Pod{},
			pod(map[string]any{"conditions": []any{cond("Ready", "False")}}),
			pod(map[string]any{}),
			`{"status":{"conditions":null}}`},
		{"container statuses are atomic", v1.Pod{},
			pod(map[string]any{"containerStatuses": []any{map[string]any{"name": "a", "ready": false}, map[string]any{"name": "b", "ready": true}}}),
			pod(map[string]any{"containerStatuses": []any{map[string]any{"name": "a", "ready": true}, map[string]any{"name": "b", "ready": true}}}),
			`{"status":{"containerStatuses":[{"name":"a","ready":true},{"name":"b","ready":true}]}}`},
		{"pod IPs merge by ip", v1.Pod{},
			pod(map[string]any{"podIPs": []any{map[string]any{"ip": "10.0.0.1"}}}),
			pod(map[string]any{"podIPs": []any{map[string]any{"ip": "10.0.0.1"}, map[string]any{"ip": "fd00::1"}}}),
			`{"status":{"$setElementOrder/podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}],"podIPs":[{"ip":"fd00::1"}]}}`},
		{"resource claim statuses retain keys", v1.Pod{},
			pod(map[string]any{"resourceClaimStatuses": []any{map[string]any{"name": "gpu", "resourceClaimName": "pod-gpu-1"}}}),
			pod(map[string]any{"resourceClaimStatuses": []any{map[string]any{"name": "gpu"}}}),
			`{"status":{"$setElementOrder/resourceClaimStatuses":[{"name":"gpu"}],"resourceClaimStatuses":[{"$retainKeys":["name"],"name":"gpu","resourceClaimName":null}]}}`},
		{"label added, annotation removed", v1.Node{},
			node(map[string]any{"name": "n", "labels": map[string]any{"a": "1"}, "annotations": map[string]any{"x": "y"}}, map[string]any{}),
			node(map[string]any{"name": "n", "labels": map[string]any{"a": "1", "b": "2"}}, map[string]any{}),
			`{"metadata":{"annotations":null,"labels":{"b":"2"}}}`},
		{"finalizer removed", v1.Node{},
			node(map[string]any{"finalizers": []any{"b", "a"}}, map[string]any{}),
			node(map[string]any{"finalizers": []any{"b"}}, map[string]any{}),
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"$setElementOrder/finalizers":["b"]}}`},
		{"unsorted unchanged finalizers still send their order, as the library does", v1.Node{},
			node(map[string]any{"finalizers": []any{"b", "a"}}, map[string]any{}),
			node(map[string]any{"finalizers": []any{"b", "a"}}, map[string]any{}),
			`{"metadata":{"$setElementOrder/finalizers":["b","a"]}}`},
		{"finalizer added keeps the new order", v1.Node{},
			node(map[string]any{"finalizers": []any{"a", "c"}}, map[string]any{}),
			node(map[string]any{"finalizers": []any{"c", "b", "a"}}, map[string]any{}),
			`{"metadata":{"$setElementOrder/finalizers":["c","b","a"],"finalizers":["b"]}}`},
		{"capacity map recursed, whole numbers stay integers", v1.Node{},
			node(map[string]any{}, map[string]any{"capacity": map[string]any{"cpu": "2", "pods": "110"}, "daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": 10250}}}),
			node(map[string]any{}, map[string]any{"capacity": map[string]any{"cpu": "4", "pods": "110"}, "daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": 10251}}}),
			`{"status":{"capacity":{"cpu":"4"},"daemonEndpoints":{"kubeletEndpoint":{"Port":10251}}}}`},
		{"images are atomic", v1.Node{},
			node(map[string]any{}, map[string]any{"images": []any{map[string]any{"names": []any{"a"}, "sizeBytes": 1}}}),
			node(map[string]any{}, map[string]any{"images": []any{map[string]any{"names": []any{"b"}, "sizeBytes": 1}}}),
			`{"status":{"images":[{"names":["b"],"sizeBytes":1}]}}`},
		{"owner references merge by uid", v1.Node{},
			node(map[string]any{"ownerReferences": []any{map[string]any{"uid": "1", "name": "a"}}}, map[string]any{}),
			node(map[string]any{"ownerReferences": []any{map[string]any{"uid": "2", "name": "b"}}}, map[string]any{}),
			`{"metadata":{"$setElementOrder/ownerReferences":[{"uid":"2"}],"ownerReferences":[{"name":"b","uid":"2"},{"$patch":"delete","uid":"1"}]}}`},
		{"type change replaces", v1.Node{},
			node(map[string]any{"labels": nil}, map[string]any{}),
			node(map[string]any{"labels": map[string]any{"a": "b"}}, map[string]any{}),
			`{"metadata":{"labels":{"a":"b"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldJSON, newJSON := mustJSON(t, tc.old), mustJSON(t, tc.new)
			got, err := CreateTwoWayMergePatch(oldJSON, newJSON, tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch\n got %s\nwant %s", got, tc.want)
			}
			lib, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			if string(lib) != tc.want {
				t.Errorf("the library's patch is %s, the table says %s", lib, tc.want)
			}
			applied, err := strategicpatch.StrategicMergePatch(oldJSON, got, tc.typ)
			if err != nil {
				t.Fatalf("applying %s: %v", got, err)
			}
			if !jsonEqual(t, applied, newJSON) {
				t.Errorf("applying %s to %s gives %s, want %s", got, oldJSON, applied, newJSON)
			}
		})
	}
}

func TestCreateTwoWayMergePatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		typ      any
	}{
		{"not a struct", `{}`, `{}`, 42},
		{"bad document", `{`, `{}`, v1.Pod{}},
		{"array document", `{}`, `[]`, v1.Pod{}},
		{"unknown field that changed", `{"status":{"nope":{"a":1}}}`, `{"status":{"nope":{"a":2}}}`, v1.Pod{}},
		{"merge key missing", `{"status":{"conditions":[{"type":"A"}]}}`, `{"status":{"conditions":[{"status":"True"}]}}`, v1.Pod{}},
		{"list element types differ", `{"metadata":{"finalizers":["a"]}}`, `{"metadata":{"finalizers":[1]}}`, v1.Pod{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CreateTwoWayMergePatch([]byte(tc.old), []byte(tc.new), tc.typ); err == nil {
				t.Error("no error")
			}
			if _, err := strategicpatch.CreateTwoWayMergePatch([]byte(tc.old), []byte(tc.new), tc.typ); err == nil {
				t.Error("the library has no error either")
			}
		})
	}
	// An unknown field that did not change needs no schema.
	p, err := CreateTwoWayMergePatch([]byte(`{"status":{"nope":{"a":1}}}`), []byte(`{"status":{"nope":{"a":1}}}`), v1.Pod{})
	if err != nil || string(p) != "{}" {
		t.Errorf("unchanged unknown field: %s, %v", p, err)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual compares two JSON documents as values.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(mustJSON(t, x), mustJSON(t, y))
}
