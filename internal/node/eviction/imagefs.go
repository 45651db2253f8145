package eviction

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageFsInfo is the part of the CRI image service DedicatedImageFs asks.
type ImageFsInfo interface {
	ImageFsInfo(ctx context.Context, in *runtimeapi.ImageFsInfoRequest, opts ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error)
}

// DedicatedImageFs returns Config.DedicatedImageFs for a kubelet whose
// root directory is rootDir: the runtime's image filesystem is dedicated
// when its mountpoint is on another device.
func DedicatedImageFs(rootDir string, images ImageFsInfo) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		resp, err := images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
		if err != nil {
			return false, err
		}
		if len(resp.GetImageFilesystems()) == 0 {
			return false, errors.New("the runtime reports no image filesystem")
		}
		mp := resp.GetImageFilesystems()[0].GetFsId().GetMountpoint()
		var root, img unix.Stat_t
		if err := unix.Stat(rootDir, &root); err != nil {
			return false, fmt.Errorf("stat %s: %w", rootDir, err)
		}
		if err := unix.Stat(mp, &img); err != nil {
			return false, fmt.Errorf("stat image filesystem %s: %w", mp, err)
		}
		return root.Dev != img.Dev, nil
	}
}
