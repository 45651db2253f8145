package critest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/utils/clock"
)

// Server is a fake CRI runtime behind a gRPC connection.
type Server struct {
	// Runtime and Images hold the fake's state; lock them (they embed a
	// sync.Mutex) to read or change it while clients may call.
	Runtime *apitest.FakeRuntimeService
	Images  *apitest.FakeImageService
	// RuntimeClient and ImageClient talk to the fake through gRPC.
	RuntimeClient runtimeapi.RuntimeServiceClient
	ImageClient   runtimeapi.ImageServiceClient

	clock  clock.PassiveClock
	events *eventStream

	mu        sync.Mutex
	last      int64 // the last timestamp handed out
	stops     []StopRequest
	pulls     []*runtimeapi.PullImageRequest
	sandboxes []*runtimeapi.RunPodSandboxRequest
	creates   []*runtimeapi.CreateContainerRequest
	updates   []*runtimeapi.UpdateContainerResourcesRequest
	handlers  []*runtimeapi.RuntimeHandler
}

// Creates returns the CreateContainer requests so far, in order, and
// forgets them.
func (s *Server) Creates() []*runtimeapi.CreateContainerRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.creates
	s.creates = nil
	return out
}

// ResourceUpdates returns the UpdateContainerResources requests so far, in
// order, and forgets them.
func (s *Server) ResourceUpdates() []*runtimeapi.UpdateContainerResourcesRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.updates
	s.updates = nil
	return out
}

// SetRuntimeHandlers sets the handlers (and their features) Status reports,
// as containerd 2.x does; the default is none, as containerd 1.6.
func (s *Server) SetRuntimeHandlers(h ...*runtimeapi.RuntimeHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers = h
}

// SandboxRuns returns the RunPodSandbox requests so far, in order, and
// forgets them.
func (s *Server) SandboxRuns() []*runtimeapi.RunPodSandboxRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := s.sandboxes
	s.sandboxes = nil
	return runs
}

// StopRequest is one StopContainer call: which container, with what timeout.
type StopRequest struct {
	ID      string
	Timeout int64
}

// Stops returns the StopContainer calls so far, in order, and forgets them.
func (s *Server) Stops() []StopRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	stops := s.stops
	s.stops = nil
	return stops
}

// Pulls returns the PullImage requests so far, in order, and forgets them.
func (s *Server) Pulls() []*runtimeapi.PullImageRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	pulls := s.pulls
	s.pulls = nil
	return pulls
}

// New starts a fake runtime whose timestamps come from clk; it stops when
// the test ends.
func New(t testing.TB, clk clock.PassiveClock) *Server {
	t.Helper()
	s := &Server{Runtime: apitest.NewFakeRuntimeService(), Images: apitest.NewFakeImageService(), clock: clk, events: newEventStream()}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, &runtimeServer{s: s})
	runtimeapi.RegisterImageServiceServer(srv, &imageServer{s: s})
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	conn, err := grpc.NewClient("passthrough:///critest",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial fake runtime: %v", err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})
	s.RuntimeClient = runtimeapi.NewRuntimeServiceClient(conn)
	s.ImageClient = runtimeapi.NewImageServiceClient(conn)
	return s
}

// now is the clock's time in nanoseconds, made strictly increasing so
// objects created at one fake instant still sort in creation order, as on
// a real runtime.
func (s *Server) now() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.clock.Now().UnixNano()
	if t <= s.last {
		t = s.last + 1
	}
	s.last = t
	return t
}

// ExitContainer makes a container exit with code now, as if its process ended.
func (s *Server) ExitContainer(id string, code int32) {
	s.Runtime.Lock()
	defer s.Runtime.Unlock()
	c, ok := s.Runtime.Containers[id]
	if !ok {
		panic("critest: no container " + id)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = code
	c.FinishedAt = s.now()
	c.Reason = "Completed"
	if code != 0 {
		c.Reason = "Error"
	}
}

// ContainerState returns the state of a container, and false when it does
// not exist.
func (s *Server) ContainerState(id string) (runtimeapi.ContainerState, bool) {
	s.Runtime.Lock()
	defer s.Runtime.Unlock()
	c, ok := s.Runtime.Containers[id]
	if !ok {
		return 0, false
	}
	return c.State, true
}

// SandboxState returns the state of a sandbox, and false when it does not exist.
func (s *Server) SandboxState(id string) (runtimeapi.PodSandboxState, bool) {
	s.Runtime.Lock()
	defer s.Runtime.Unlock()
	sb, ok := s.Runtime.Sandboxes[id]
	if !ok {
		return 0, false
	}
	return sb.State, true
}

// Calls returns the runtime calls made so far, in order, and forgets them.
func (s *Server) Calls() []string {
	s.Runtime.Lock()
	defer s.Runtime.Unlock()
	calls := s.Runtime.Called
	s.Runtime.Called = nil
	return calls
}

// ImageCalls returns the image calls made so far, in order, and forgets them.
func (s *Server) ImageCalls() []string {
	s.Images.Lock()
	defer s.Images.Unlock()
	calls := s.Images.Called
	s.Images.Called = nil
	return calls
}

// ContainerID is the ID the fake gives the attempt of a container in a sandbox.
func ContainerID(sandboxID, name string, attempt uint32) string {
	return apitest.BuildContainerName(&runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}, sandboxID)
}

// SandboxID is the ID the fake gives the attempt of a pod's sandbox.
func SandboxID(name, namespace, uid string, attempt uint32) string {
	return apitest.BuildSandboxName(&runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid, Attempt: attempt})
}

var (
	_ runtimeapi.RuntimeServiceServer = (*runtimeServer)(nil)
	_ runtimeapi.ImageServiceServer   = (*imageServer)(nil)
)

type runtimeServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	s *Server
}

func (r *runtimeServer) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return r.s.Runtime.Version(ctx, req.Version)
}

func (r *runtimeServer) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp, err := r.s.Runtime.Status(ctx, req.Verbose)
	if err != nil {
		return nil, err
	}
	r.s.mu.Lock()
	resp.RuntimeHandlers = r.s.handlers
	r.s.mu.Unlock()
	return resp, nil
}

// UpdateContainerResources records the request and keeps the new Linux
// resources as the container's, which ContainerStatus then reports (as
// containerd does).
func (r *runtimeServer) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	r.s.mu.Lock()
	r.s.updates = append(r.s.updates, req)
	r.s.mu.Unlock()
	if err := r.s.Runtime.UpdateContainerResources(ctx, req.ContainerId, &runtimeapi.ContainerResources{Linux: req.Linux}); err != nil {
		return nil, err
	}
	r.s.Runtime.Lock()
	defer r.s.Runtime.Unlock()
	c, ok := r.s.Runtime.Containers[req.ContainerId]
	if !ok {
		return nil, grpcstatus.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	c.Resources = &runtimeapi.ContainerResources{Linux: req.Linux}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// UpdatePodSandboxResources is not implemented, as in containerd 1.6 and 2.x.
func (r *runtimeServer) UpdatePodSandboxResources(context.Context, *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return nil, grpcstatus.Error(codes.Unimplemented, "UpdatePodSandboxResources is not implemented")
}

func (r *runtimeServer) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	r.s.mu.Lock()
	r.s.sandboxes = append(r.s.sandboxes, req)
	r.s.mu.Unlock()
	id, err := r.s.Runtime.RunPodSandbox(ctx, req.Config, req.RuntimeHandler)
	if err != nil {
		return nil, err
	}
	r.s.Runtime.Lock()
	r.s.Runtime.Sandboxes[id].CreatedAt = r.s.now()
	r.s.Runtime.Unlock()
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (r *runtimeServer) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if err := r.s.Runtime.StopPodSandbox(ctx, req.PodSandboxId); err != nil {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (r *runtimeServer) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := r.s.Runtime.RemovePodSandbox(ctx, req.PodSandboxId); err != nil {
		return nil, err
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (r *runtimeServer) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	return r.s.Runtime.PodSandboxStatus(ctx, req.PodSandboxId, req.Verbose)
}

func (r *runtimeServer) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	items, err := r.s.Runtime.ListPodSandbox(ctx, req.Filter)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

func (r *runtimeServer) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	r.s.mu.Lock()
	r.s.creates = append(r.s.creates, req)
	r.s.mu.Unlock()
	id, err := r.s.Runtime.CreateContainer(ctx, req.PodSandboxId, req.Config, req.SandboxConfig)
	if err != nil {
		return nil, err
	}
	r.s.Runtime.Lock()
	c := r.s.Runtime.Containers[id]
	c.CreatedAt = r.s.now()
	// What a real runtime reports and the fake leaves out.
	c.Mounts = req.Config.Mounts
	if lr := req.Config.GetLinux().GetResources(); lr != nil {
		c.Resources = &runtimeapi.ContainerResources{Linux: lr}
	}
	if req.Config.LogPath != "" {
		c.LogPath = filepath.Join(req.SandboxConfig.GetLogDirectory(), req.Config.LogPath)
	}
	r.s.Runtime.Unlock()
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

func (r *runtimeServer) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := r.s.Runtime.StartContainer(ctx, req.ContainerId); err != nil {
		return nil, err
	}
	r.s.Runtime.Lock()
	r.s.Runtime.Containers[req.ContainerId].StartedAt = r.s.now()
	r.s.Runtime.Unlock()
	return &runtimeapi.StartContainerResponse{}, nil
}

func (r *runtimeServer) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	r.s.mu.Lock()
	r.s.stops = append(r.s.stops, StopRequest{ID: req.ContainerId, Timeout: req.Timeout})
	r.s.mu.Unlock()
	if err := r.s.Runtime.StopContainer(ctx, req.ContainerId, req.Timeout); err != nil {
		return nil, err
	}
	r.s.Runtime.Lock()
	r.s.Runtime.Containers[req.ContainerId].FinishedAt = r.s.now()
	r.s.Runtime.Unlock()
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *runtimeServer) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := r.s.Runtime.RemoveContainer(ctx, req.ContainerId); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *runtimeServer) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	cs, err := r.s.Runtime.ListContainers(ctx, req.Filter)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainersResponse{Containers: cs}, nil
}

func (r *runtimeServer) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return r.s.Runtime.ContainerStatus(ctx, req.ContainerId, req.Verbose)
}

func (r *runtimeServer) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	st, err := r.s.Runtime.ContainerStats(ctx, req.ContainerId)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

func (r *runtimeServer) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	return r.s.events.serve(stream)
}

type imageServer struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}

func (i *imageServer) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	images, err := i.s.Images.ListImages(ctx, req.Filter)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListImagesResponse{Images: images}, nil
}

func (i *imageServer) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return i.s.Images.ImageStatus(ctx, req.Image, req.Verbose)
}

func (i *imageServer) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	i.s.mu.Lock()
	i.s.pulls = append(i.s.pulls, req)
	i.s.mu.Unlock()
	ref, err := i.s.Images.PullImage(ctx, req.Image, req.Auth, req.SandboxConfig)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: ref}, nil
}

func (i *imageServer) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	if err := i.s.Images.RemoveImage(ctx, req.Image); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (i *imageServer) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return i.s.Images.ImageFsInfo(ctx)
}

// eventStream serves GetContainerEvents from what a test sends.
type eventStream struct {
	enabled chan struct{} // closed once events are served
	opened  chan struct{}
	events  chan *runtimeapi.ContainerEventResponse
	end     chan error
}

func newEventStream() *eventStream {
	return &eventStream{enabled: make(chan struct{}), opened: make(chan struct{}, 100),
		events: make(chan *runtimeapi.ContainerEventResponse), end: make(chan error)}
}

// EnableEvents makes GetContainerEvents serve the events SendEvent gives;
// until then it answers Unimplemented, as containerd 1.x does.
func (s *Server) EnableEvents() { close(s.events.enabled) }

// EventStreamOpened receives once each time a client opens the event stream.
func (s *Server) EventStreamOpened() <-chan struct{} { return s.events.opened }

// SendEvent hands ev to the open event stream; it blocks until the stream
// took it.
func (s *Server) SendEvent(ev *runtimeapi.ContainerEventResponse) { s.events.events <- ev }

// EndEventStream ends the open event stream with err (a status error or
// nil for a clean end); it blocks until a stream took it.
func (s *Server) EndEventStream(err error) { s.events.end <- err }

func (e *eventStream) serve(stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	select {
	case <-e.enabled:
	default:
		return grpcstatus.Error(codes.Unimplemented, "method GetContainerEvents not implemented")
	}
	e.opened <- struct{}{}
	for {
		select {
		case ev := <-e.events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case err := <-e.end:
			return err
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}
