package nodestatus

import (
	"context"
	"sort"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// RuntimeStatus is the part of the CRI runtime service a Source asks.
type RuntimeStatus interface {
	Status(ctx context.Context, in *runtimeapi.StatusRequest, opts ...grpc.CallOption) (*runtimeapi.StatusResponse, error)
}

// ImageLister is the part of the CRI image service a Source asks.
type ImageLister interface {
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
}

// HealthCheck reports a component's health (the PLEG's); nil is healthy.
type HealthCheck interface {
	HealthCheck() error
}

// PressureConditions reports the node pressure conditions (the eviction
// manager's).
type PressureConditions interface {
	Conditions() []v1.NodeConditionType
}

// StorageStatus reports the volume plugins' readiness (the CSINode not
// initialized yet) and the attachable volumes pods use.
type StorageStatus interface {
	Err() error
	VolumesInUse() []v1.UniqueVolumeName
}

var (
	_ RuntimeStatus = (runtimeapi.RuntimeServiceClient)(nil)
	_ ImageLister   = (runtimeapi.ImageServiceClient)(nil)
)

// SourceConfig configures a Source.
type SourceConfig struct {
	// Static are the inputs that do not change while the kubelet runs
	// (machine, configuration, versions).
	Static  Inputs
	Runtime RuntimeStatus // required
	Images  ImageLister   // required
	// PLEG, Pressure and Storage may be nil: healthy, no pressure, no
	// volumes reported.
	PLEG     HealthCheck
	Pressure PressureConditions
	Storage  StorageStatus
	// Shutdown is the graceful node shutdown manager; may be nil.
	Shutdown ShutdownStatus
}

// ShutdownStatus reports "node is shutting down" while it does.
type ShutdownStatus interface {
	ShutdownStatus() error
}

// Source gathers fresh Inputs for the Controller: Static plus runtime
// health, PLEG health, pressure conditions, storage and images asked for
// on each call.
type Source struct{ cfg SourceConfig }

// NewSource returns a Source.
func NewSource(cfg SourceConfig) *Source { return &Source{cfg: cfg} }

// Inputs is Config.Inputs. It never fails: what cannot be read is
// reported through the Inputs' health fields, or left out (images).
func (s *Source) Inputs(ctx context.Context) (Inputs, error) {
	in := s.cfg.Static
	resp, err := s.cfg.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
	rs := FromRuntimeStatus(resp, err)
	in.RuntimeErr, in.NetworkErr, in.RuntimeHandlers, in.Features = rs.RuntimeErr, rs.NetworkErr, rs.Handlers, rs.Features
	if s.cfg.PLEG != nil {
		in.PLEGErr = s.cfg.PLEG.HealthCheck()
	}
	if s.cfg.Shutdown != nil {
		in.ShutdownErr = s.cfg.Shutdown.ShutdownStatus()
	}
	if s.cfg.Pressure != nil {
		for _, c := range s.cfg.Pressure.Conditions() {
			switch c {
			case v1.NodeMemoryPressure:
				in.MemoryPressure = true
			case v1.NodeDiskPressure:
				in.DiskPressure = true
			case v1.NodePIDPressure:
				in.PIDPressure = true
			}
		}
	}
	if s.cfg.Storage != nil {
		in.StorageErr = s.cfg.Storage.Err()
		// An empty list (not nil) clears volumesInUse in the API.
		in.VolumesInUse = s.cfg.Storage.VolumesInUse()
		if in.VolumesInUse == nil {
			in.VolumesInUse = []v1.UniqueVolumeName{}
		}
	}
	imgs, err := s.cfg.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		klog.V(2).InfoS("Cannot list images for the node status", "err", err)
		return in, nil
	}
	in.Images = NodeImages(imgs.GetImages())
	return in, nil
}

// NodeImages are the runtime's images as the Node lists them: each with
// its tags and digests, sorted; images with neither are left out. Pure.
func NodeImages(images []*runtimeapi.Image) []v1.ContainerImage {
	var out []v1.ContainerImage
	for _, img := range images {
		names := append(append([]string{}, img.RepoTags...), img.RepoDigests...)
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}
