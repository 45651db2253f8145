package localapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/smp"
)

// errUnsupportedPatch is the API server's 415 for a patch type it does
// not take, worded for what this server takes; kubectl reports a 415 to
// `apply --server-side` as "Server-side apply not available on the server".
func errUnsupportedPatch(contentType string) error {
	msg := fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s (%q is not served by the standalone kubelet)",
		types.StrategicMergePatchType, types.MergePatchType, contentType)
	if contentType == string(types.ApplyYAMLPatchType) || contentType == string(types.ApplyCBORPatchType) {
		msg = "server-side apply is not supported by the standalone kubelet's API: use client-side `kubectl apply` (the default)"
	}
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, msg)
}

// applyPatch applies a strategic merge patch (with schema's patch
// strategies; smp gives strategicpatch's result without linking its
// OpenAPI dependencies) or a JSON merge patch to current, both JSON.
func applyPatch(contentType string, current, patch []byte, schema runtime.Object) ([]byte, error) {
	switch types.PatchType(contentType) {
	case types.StrategicMergePatchType:
		out, err := smp.StrategicMergePatch(current, patch, schema)
		if err != nil {
			return nil, errBadRequest("%v", err)
		}
		return out, nil
	case types.MergePatchType:
		return mergePatch(current, patch)
	}
	return nil, errUnsupportedPatch(contentType)
}

// mergePatch is RFC 7386 JSON merge patch.
func mergePatch(current, patch []byte) ([]byte, error) {
	var doc, p any
	if err := json.Unmarshal(current, &doc); err != nil {
		return nil, errBadRequest("the object is not JSON: %v", err)
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, errBadRequest("the patch is not JSON: %v", err)
	}
	return json.Marshal(mergeValue(doc, p))
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}
