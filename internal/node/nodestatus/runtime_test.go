package nodestatus

import (
	"errors"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestFromRuntimeStatus(t *testing.T) {
	ready := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	netReady := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	netDown := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"}
	resp := func(conds ...*runtimeapi.RuntimeCondition) *runtimeapi.StatusResponse {
		return &runtimeapi.StatusResponse{
			Status:          &runtimeapi.RuntimeStatus{Conditions: conds},
			RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}},
			Features:        &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
		}
	}
	callErr := errors.New("rpc error: connection refused")
	tests := []struct {
		name               string
		resp               *runtimeapi.StatusResponse
		err                error
		runtimeMsg, netMsg string
		handlers           int
	}{
		{name: "healthy", resp: resp(ready, netReady), handlers: 1},
		{name: "network not ready", resp: resp(ready, netDown), handlers: 1,
			netMsg: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"},
		{name: "runtime condition missing", resp: resp(netReady),
			runtimeMsg: "container runtime not ready: <nil>"},
		{name: "call failed", err: callErr, runtimeMsg: "container runtime is down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := FromRuntimeStatus(tc.resp, tc.err)
			if msg(st.RuntimeErr) != tc.runtimeMsg || msg(st.NetworkErr) != tc.netMsg {
				t.Errorf("errors = %q / %q, want %q / %q", msg(st.RuntimeErr), msg(st.NetworkErr), tc.runtimeMsg, tc.netMsg)
			}
			if len(st.Handlers) != tc.handlers {
				t.Errorf("handlers = %+v", st.Handlers)
			}
			if tc.err != nil && !errors.Is(st.RuntimeErr, callErr) {
				t.Error("the call's error is not kept as the cause")
			}
			if tc.handlers > 0 {
				h := st.Handlers[0]
				if h.Name != "runc" || !*h.Features.UserNamespaces || *h.Features.RecursiveReadOnlyMounts {
					t.Errorf("handler = %+v", h)
				}
				if st.Features == nil || !*st.Features.SupplementalGroupsPolicy {
					t.Errorf("features = %+v", st.Features)
				}
			}
		})
	}
}

func msg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
