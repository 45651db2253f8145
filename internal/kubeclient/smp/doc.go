// Package smp creates two-way strategic merge patches, the bytes
// k8s.io/apimachinery's strategicpatch.CreateTwoWayMergePatch returns for the
// same documents and Go type: merge lists by key with $setElementOrder and
// "$patch": "delete", $deleteFromPrimitiveList, $retainKeys, atomic lists and
// replace-strategy fields sent whole, maps recursed, deleted keys as null.
// StrategicMergePatch applies one (the local API's `kubectl patch/apply/edit`)
// with the library's StrategicMergePatch result and refusals; where the
// library panics (objects as merge keys) it refuses the patch.
//
// We keep our own because strategicpatch's OpenAPI schema support links
// gnostic-models, kube-openapi, go-openapi and two YAML libraries (about
// 1.6 MB of the stripped kubelet, which has a 32 MiB budget); the kubelet
// only needs the struct-tag schema. Tags are read by apimachinery's own
// forked encoding/json field lookup, so the schema is upstream's. The tests
// compare byte for byte with the library and apply both with it; fuzz
// further with `go test -fuzz FuzzPodStatusPatch ./internal/kubeclient/smp`
// (or FuzzNodePatch, FuzzStrategicMergePatch).
package smp
