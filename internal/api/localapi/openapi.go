package localapi

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// The OpenAPI v3 documents this API serves say no more than kubectl needs
// to know: that create, update and patch of the writable kinds take
// fieldValidation, so kubectl leaves validation to this server (strict
// decoding and the API server's checks) instead of failing to download
// schemas for client-side validation. With no requestBody, kubectl
// computes strategic merge patches from its built-in types, as it does
// for an API server without OpenAPI. Every other OpenAPI path is 404.
var openAPIv1, openAPIRoot = func() ([]byte, []byte) {
	param := []any{map[string]any{"name": "fieldValidation", "in": "query", "schema": map[string]any{"type": "string", "uniqueItems": true}}}
	paths := map[string]any{}
	for _, r := range []struct{ resource, kind string }{{"pods", "Pod"}, {"configmaps", "ConfigMap"}, {"secrets", "Secret"}} {
		gvk := map[string]string{"group": "", "version": "v1", "kind": r.kind}
		op := map[string]any{"x-kubernetes-group-version-kind": gvk, "parameters": param, "responses": map[string]any{}}
		paths["/api/v1/namespaces/{namespace}/"+r.resource+"/{name}"] = map[string]any{"put": op, "patch": op}
		paths["/api/v1/namespaces/{namespace}/"+r.resource] = map[string]any{"post": op}
	}
	doc, err := json.Marshal(map[string]any{
		"openapi": "3.0.0", "info": map[string]any{"title": "Kubernetes (standalone kubelet)", "version": "v1.36"},
		"paths": paths, "components": map[string]any{},
	})
	if err != nil {
		panic(err)
	}
	sum := sha512.Sum512(doc)
	root, err := json.Marshal(map[string]any{"paths": map[string]any{
		"api/v1": map[string]string{"serverRelativeURL": "/openapi/v3/api/v1?hash=" + hex.EncodeToString(sum[:])},
	}})
	if err != nil {
		panic(err)
	}
	return doc, root
}()

// openAPIv2Type is the protobuf OpenAPI v2 document's media type.
const openAPIv2Type = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

// serveOpenAPI answers /openapi/v3, /openapi/v3/api/v1 and /openapi/v2;
// ok is false for other paths. The v2 document is empty (an empty
// protobuf message): no schemas are published, so kubectl's client-side
// validation of a kind this server does not serve finds nothing to check
// and kubectl goes on to report the kind as unknown.
func serveOpenAPI(w http.ResponseWriter, r *http.Request, path string) bool {
	var body []byte
	switch path {
	case "/openapi/v2":
		w.Header().Set("Content-Type", openAPIv2Type)
		w.WriteHeader(http.StatusOK)
		return true
	case "/openapi/v3":
		body = openAPIRoot
	case "/openapi/v3/api/v1":
		body = openAPIv1
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
	return true
}
