package nodestatus

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/smp"
)

// StatusPatch is the strategic merge patch that turns old into cur for the
// status subresource: status and metadata changes, never the spec.
// Addresses are replaced whole: their merge key (type) is not unique (two
// InternalIPs on a dual-stack node), so merging them could corrupt the list.
func StatusPatch(old, cur *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encoding node %q: %w", old.Name, err)
	}
	diff := cur.DeepCopy()
	diff.Spec = old.Spec
	replaceAddresses := !apiequality.Semantic.DeepEqual(old.Status.Addresses, cur.Status.Addresses)
	if replaceAddresses {
		diff.Status.Addresses = old.Status.Addresses
	}
	curJSON, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("encoding node %q: %w", cur.Name, err)
	}
	patch, err := smp.CreateTwoWayMergePatch(oldJSON, curJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("computing the status patch of node %q: %w", cur.Name, err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	return withReplacedAddresses(patch, cur.Status.Addresses)
}

// withReplacedAddresses adds status.addresses with a replace directive.
func withReplacedAddresses(patch []byte, addrs []v1.NodeAddress) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("decoding the status patch: %w", err)
	}
	status, _ := p["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		p["status"] = status
	}
	list := make([]any, 0, len(addrs)+1)
	for _, a := range addrs {
		list = append(list, a)
	}
	list = append(list, map[string]any{"$patch": "replace"})
	status["addresses"] = list
	out, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the status patch: %w", err)
	}
	return out, nil
}
