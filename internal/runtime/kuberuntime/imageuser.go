package kuberuntime

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageUser returns the user an image runs as, from the runtime's image
// status: a numeric uid, else a user name. An image that names no user
// runs as root, so it yields uid 0, as upstream. It is pure.
func ImageUser(img *runtimeapi.Image) (*int64, string) {
	if img != nil {
		if img.Uid != nil {
			uid := img.Uid.Value
			return &uid, ""
		}
		if img.Username != "" {
			return nil, img.Username
		}
	}
	return new(int64), ""
}

// imageUser asks the runtime who the image ref runs as.
func (m *Manager) imageUser(ctx context.Context, ref string) (*int64, string, error) {
	resp, err := m.puller.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return nil, "", fmt.Errorf("image status of %q: %w", ref, err)
	}
	uid, name := ImageUser(resp.GetImage())
	return uid, name, nil
}
