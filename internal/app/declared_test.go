package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
)

type fakeRuntimeStatus struct {
	resp  *runtimeapi.StatusResponse
	err   error
	calls int
}

func (f *fakeRuntimeStatus) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	f.calls++
	return f.resp, f.err
}

var _ nodestatus.RuntimeStatus = (*fakeRuntimeStatus)(nil)

// TestDeclaredFeatures: configuration (featureGates) and runtime →
// node.status.declaredFeatures, as published.
func TestDeclaredFeatures(t *testing.T) {
	hostNet := &runtimeapi.StatusResponse{Features: &runtimeapi.RuntimeFeatures{UserNamespacesHostNetwork: true}}
	tests := []struct {
		name      string
		gates     map[string]bool
		rt        *fakeRuntimeStatus
		want      []string
		wantCalls int
		wantErr   string
	}{
		{name: "defaults", rt: &fakeRuntimeStatus{resp: hostNet}, wantCalls: 1,
			want: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "init container resize off", gates: map[string]bool{"InPlacePodVerticalScalingInitContainers": false},
			rt: &fakeRuntimeStatus{resp: hostNet}, wantCalls: 1, want: []string{"InPlacePodLevelResourcesVerticalScaling"}},
		{name: "user namespaces with host network asked for, runtime able: still not honoured",
			gates: map[string]bool{"UserNamespacesHostNetworkSupport": true}, rt: &fakeRuntimeStatus{resp: hostNet}, wantCalls: 1,
			want: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "runtime status fails", rt: &fakeRuntimeStatus{err: errors.New("unavailable")}, wantCalls: 1,
			want: []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
		{name: "all off: nothing published, the runtime not asked", gates: map[string]bool{
			"NodeDeclaredFeatures": false, "ExtendWebSocketsToKubelet": false, "InPlacePodLevelResourcesVerticalScaling": false,
			"InPlacePodVerticalScalingInitContainers": false, "RestartAllContainersOnContainerExits": false},
			rt: &fakeRuntimeStatus{resp: hostNet}},
		{name: "every declarable gate off: an empty list", gates: map[string]bool{
			"ExtendWebSocketsToKubelet": false, "InPlacePodLevelResourcesVerticalScaling": false,
			"InPlacePodVerticalScalingInitContainers": false, "RestartAllContainersOnContainerExits": false},
			rt: &fakeRuntimeStatus{resp: hostNet}, wantCalls: 1, want: []string{}},
		{name: "broken dependencies", gates: map[string]bool{"NodeDeclaredFeatures": false},
			rt: &fakeRuntimeStatus{}, wantErr: "failed to set feature gates from initial flags-based config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := declaredFeatures(context.Background(), &kubeletconfig.KubeletConfiguration{FeatureGates: tc.gates}, tc.rt)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("declared %#v, want %#v", got, tc.want)
			}
			if tc.rt.calls != tc.wantCalls {
				t.Errorf("runtime Status calls %d, want %d", tc.rt.calls, tc.wantCalls)
			}
		})
	}
}
