package stats

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// fakeRuntime answers the CRI calls the stats use from canned data; any
// other call panics through the nil embedded interface.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient

	mu             sync.Mutex
	sandboxes      []*runtimeapi.PodSandbox
	containers     []*runtimeapi.Container
	containerStats []*runtimeapi.ContainerStats
	// sandboxStats answers ListPodSandboxStats; sandboxStatsErr fails it.
	sandboxStats    []*runtimeapi.PodSandboxStats
	sandboxStatsErr error
	// verbose is the "info" JSON of each sandbox's verbose status.
	verbose map[string]string
	listErr error
	calls   map[string]int
	// statusConfig is the "config" JSON of the runtime's verbose status.
	statusConfig string
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	f.count("Status")
	return &runtimeapi.StatusResponse{Info: map[string]string{"config": f.statusConfig}}, nil
}

func (f *fakeRuntime) count(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
}

func (f *fakeRuntime) callCount(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	f.count("ListPodSandbox")
	if f.listErr != nil {
		return nil, f.listErr
	}
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

// ListContainers labels each container as the kubelet does, with its
// sandbox's pod and its own name, unless the test labelled it.
func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	f.count("ListContainers")
	out := make([]*runtimeapi.Container, len(f.containers))
	for i, c := range f.containers {
		out[i] = c
		if c.Labels != nil {
			continue
		}
		for _, sb := range f.sandboxes {
			if sb.GetId() == c.GetPodSandboxId() {
				l := maps.Clone(sb.GetLabels())
				l[criconfig.LabelContainerName] = c.GetMetadata().GetName()
				out[i] = proto.CloneOf(c)
				out[i].Labels = l
			}
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeRuntime) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest, ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error) {
	f.count("ListContainerStats")
	return &runtimeapi.ListContainerStatsResponse{Stats: f.containerStats}, nil
}

func (f *fakeRuntime) ListPodSandboxStats(context.Context, *runtimeapi.ListPodSandboxStatsRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f.count("ListPodSandboxStats")
	if f.sandboxStatsErr != nil {
		return nil, f.sandboxStatsErr
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: f.sandboxStats}, nil
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, r *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.count("PodSandboxStatus")
	info, ok := f.verbose[r.GetPodSandboxId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such sandbox")
	}
	return &runtimeapi.PodSandboxStatusResponse{Info: map[string]string{"info": info}}, nil
}

// fakeImages answers ImageFsInfo and ListImages.
type fakeImages struct {
	runtimeapi.ImageServiceClient
	resp   *runtimeapi.ImageFsInfoResponse
	err    error
	images []*runtimeapi.Image
	lists  int
}

func (f *fakeImages) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	f.lists++
	return &runtimeapi.ListImagesResponse{Images: f.images}, nil
}

func (f *fakeImages) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	return f.resp, f.err
}

type fakePods []*v1.Pod

func (f fakePods) List() []*v1.Pod { return f }

func podWithUID(uid string) *v1.Pod {
	p := &v1.Pod{}
	p.UID = types.UID(uid)
	return p
}

func sandbox(id, ns, name, uid string, ready bool, created int64) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{
		Id: id, State: st, CreatedAt: created,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: ns, Uid: uid},
		Labels:   map[string]string{criconfig.LabelPodName: name, criconfig.LabelPodNamespace: ns, criconfig.LabelPodUID: uid},
	}
}

func container(id, sandboxID, name string, running bool, created int64) *runtimeapi.Container {
	st := runtimeapi.ContainerState_CONTAINER_EXITED
	if running {
		st = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.Container{Id: id, PodSandboxId: sandboxID, State: st, CreatedAt: created, Metadata: &runtimeapi.ContainerMetadata{Name: name}}
}

// ctrStats is containerd-1.6-shaped container stats: cumulative CPU, a
// zero usage_nano_cores and available_bytes, a writable layer on mountpoint.
func ctrStats(id, name string, ts int64, cpuNanos, ws, usage uint64, mountpoint string) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name}},
		Cpu:        &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpuNanos}, UsageNanoCores: &runtimeapi.UInt64Value{}},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws}, UsageBytes: &runtimeapi.UInt64Value{Value: usage},
			AvailableBytes: &runtimeapi.UInt64Value{}, RssBytes: &runtimeapi.UInt64Value{Value: ws / 2},
			PageFaults: &runtimeapi.UInt64Value{Value: 10}, MajorPageFaults: &runtimeapi.UInt64Value{},
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp: ts, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
			UsedBytes: &runtimeapi.UInt64Value{Value: 8192}, InodesUsed: &runtimeapi.UInt64Value{Value: 5},
		},
	}
}

func verboseInfo(pid int, cgroupsPath string) string {
	return fmt.Sprintf(`{"pid":%d,"processStatus":"running","runtimeSpec":{"linux":{"cgroupsPath":%q}}}`, pid, cgroupsPath)
}
