package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
)

// hostnameLabel is the well-known node label the kubelet sets to its node name.
const hostnameLabel = "kubernetes.io/hostname"

// patchOp is one RFC 6902 JSON patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// pinPatch decides how to keep pod on node: nothing when it already is,
// else the JSON patch that puts it there. It is pure.
func pinPatch(pod *v1.Pod, node string) []patchOp {
	return append(pinName(pod, node), pinAffinity(pod, node)...)
}

// pinName binds or selects the node by name.
func pinName(pod *v1.Pod, node string) []patchOp {
	switch {
	case pod.Spec.NodeName == node:
		return nil
	case pod.Spec.NodeName != "":
		return []patchOp{{Op: "replace", Path: "/spec/nodeName", Value: node}}
	case pod.Spec.NodeSelector == nil:
		return []patchOp{{Op: "add", Path: "/spec/nodeSelector", Value: map[string]string{hostnameLabel: node}}}
	case pod.Spec.NodeSelector[hostnameLabel] == node:
		return nil
	default:
		// "add" replaces an existing member too (RFC 6902 4.1).
		return []patchOp{{Op: "add", Path: "/spec/nodeSelector/" + escapePointer(hostnameLabel), Value: node}}
	}
}

// pinAffinity points required node affinity terms that name a node
// (matchFields metadata.name or matchExpressions kubernetes.io/hostname with
// operator In, as the e2e framework's SetAffinity writes them) at node; a
// spec picks "a random ready node", which may be someone else's.
func pinAffinity(pod *v1.Pod, node string) []patchOp {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	sel := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
	changed := false
	retarget := func(reqs []v1.NodeSelectorRequirement, key string) {
		for i := range reqs {
			r := &reqs[i]
			if r.Key != key || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			if len(r.Values) != 1 || r.Values[0] != node {
				r.Values = []string{node}
				changed = true
			}
		}
	}
	for i := range sel.NodeSelectorTerms {
		retarget(sel.NodeSelectorTerms[i].MatchFields, "metadata.name")
		retarget(sel.NodeSelectorTerms[i].MatchExpressions, hostnameLabel)
	}
	if !changed {
		return nil
	}
	return []patchOp{{Op: "replace", Path: "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution", Value: sel}}
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// review answers one AdmissionReview request: a pod created by a user that
// routes names goes to that user's node; anything else is admitted as is.
func review(req *admissionv1.AdmissionRequest, routes map[string]string) (*admissionv1.AdmissionResponse, []patchOp, error) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create {
		return resp, nil, nil
	}
	node, ok := routes[req.UserInfo.Username]
	if !ok {
		return resp, nil, fmt.Errorf("created by %q, who has no node: not pinned", req.UserInfo.Username)
	}
	var pod v1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return resp, nil, fmt.Errorf("decode pod: %w", err)
	}
	ops := pinPatch(&pod, node)
	if len(ops) == 0 {
		return resp, nil, nil
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return resp, nil, err
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = raw, &pt
	return resp, ops, nil
}

// routeFlag collects -route USER=NODE.
type routeFlag map[string]string

func (r routeFlag) String() string { return fmt.Sprint(map[string]string(r)) }

func (r routeFlag) Set(v string) error {
	user, node, ok := strings.Cut(v, "=")
	if !ok || user == "" || node == "" {
		return fmt.Errorf("want USER=NODE, got %q", v)
	}
	r[user] = node
	return nil
}

func main() {
	routes := routeFlag{}
	var addr, cert, key string
	flag.Var(routes, "route", "USER=NODE: pin pods that USER creates to NODE (repeatable)")
	flag.StringVar(&addr, "listen", "127.0.0.1:0", "HTTPS address")
	flag.StringVar(&cert, "tls-cert", "", "serving certificate (PEM)")
	flag.StringVar(&key, "tls-key", "", "serving key (PEM)")
	flag.Parse()
	if len(routes) == 0 || cert == "" || key == "" {
		fmt.Fprintln(os.Stderr, "usage: pinpods -route USER=NODE... -tls-cert FILE -tls-key FILE [-listen ADDR]")
		os.Exit(2)
	}
	http.HandleFunc("/pin", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ar admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &ar); err != nil || ar.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		resp, ops, err := review(ar.Request, routes)
		if err != nil {
			log.Printf("%s/%s: %v (admitted unchanged)", ar.Request.Namespace, ar.Request.Name, err)
		}
		for _, op := range ops {
			log.Printf("pod %s/%s: %s %s = %v", ar.Request.Namespace, ar.Request.Name, op.Op, op.Path, op.Value)
		}
		ar.Response, ar.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(&ar); err != nil {
			log.Printf("write response: %v", err)
		}
	})
	log.Printf("pinning pods by creator %v; serving on https://%s/pin", routes, addr)
	log.Fatal(http.ListenAndServeTLS(addr, cert, key, nil))
}
