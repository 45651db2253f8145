package cri

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StatusClient is the part of the CRI RuntimeService SandboxImage uses.
type StatusClient interface {
	Status(ctx context.Context, in *runtimeapi.StatusRequest, opts ...grpc.CallOption) (*runtimeapi.StatusResponse, error)
}

var _ StatusClient = runtimeapi.RuntimeServiceClient(nil)

// SandboxImage is the image the runtime runs pod sandboxes from: the
// sandboxImage of its verbose status config (containerd's CRI plugin
// reports it there; other runtimes may not, which gives "").
func SandboxImage(ctx context.Context, rs StatusClient) (string, error) {
	resp, err := rs.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return "", fmt.Errorf("runtime status: %w", err)
	}
	raw, ok := resp.GetInfo()["config"]
	if !ok {
		return "", nil
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return "", fmt.Errorf("runtime status config: %w", err)
	}
	return cfg.SandboxImage, nil
}
