package cri

import (
	"context"
	"encoding/json"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

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
