package nodestatus

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// RuntimeState is what the node status takes from the runtime's CRI Status.
type RuntimeState struct {
	RuntimeErr, NetworkErr error
	Handlers               []v1.NodeRuntimeHandler
	Features               *v1.NodeFeatures
}

// runtimeDownError reads as upstream's "container runtime is down" and
// keeps the cause for logs and errors.Is.
type runtimeDownError struct{ cause error }

func (e runtimeDownError) Error() string { return "container runtime is down" }
func (e runtimeDownError) Unwrap() error { return e.cause }

// FromRuntimeStatus turns the answer of a CRI Status call into the runtime
// and network errors the Ready condition reports, worded as upstream, plus
// the runtime handlers and features. Handlers and features are only taken
// from a runtime that is ready.
func FromRuntimeStatus(resp *runtimeapi.StatusResponse, err error) RuntimeState {
	if err != nil {
		return RuntimeState{RuntimeErr: runtimeDownError{cause: err}}
	}
	var st RuntimeState
	if c := runtimeCondition(resp, runtimeapi.NetworkReady); c == nil || !c.Status {
		st.NetworkErr = fmt.Errorf("container runtime network not ready: %s", conditionString(c))
	}
	if c := runtimeCondition(resp, runtimeapi.RuntimeReady); c == nil || !c.Status {
		st.RuntimeErr = fmt.Errorf("container runtime not ready: %s", conditionString(c))
		return st
	}
	st.Handlers = make([]v1.NodeRuntimeHandler, 0, len(resp.GetRuntimeHandlers()))
	for _, h := range resp.GetRuntimeHandlers() {
		st.Handlers = append(st.Handlers, v1.NodeRuntimeHandler{
			Name: h.GetName(),
			Features: &v1.NodeRuntimeHandlerFeatures{
				RecursiveReadOnlyMounts: ptr.To(h.GetFeatures().GetRecursiveReadOnlyMounts()),
				UserNamespaces:          ptr.To(h.GetFeatures().GetUserNamespaces()),
			},
		})
	}
	if f := resp.GetFeatures(); f != nil {
		st.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(f.GetSupplementalGroupsPolicy())}
	}
	return st
}

func runtimeCondition(resp *runtimeapi.StatusResponse, t string) *runtimeapi.RuntimeCondition {
	for _, c := range resp.GetStatus().GetConditions() {
		if c.GetType() == t {
			return c
		}
	}
	return nil
}

func conditionString(c *runtimeapi.RuntimeCondition) string {
	if c == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
}

// DeclaredRuntimeFeatures are the runtime features that feature discovery
// reads (Declare), from a CRI Status answer; none when the call failed, as
// upstream's start-up prefetch.
func DeclaredRuntimeFeatures(resp *runtimeapi.StatusResponse, err error) ndf.RuntimeFeatures {
	if err != nil {
		return ndf.RuntimeFeatures{}
	}
	return ndf.RuntimeFeatures{UserNamespacesHostNetwork: resp.GetFeatures().GetUserNamespacesHostNetwork()}
}
