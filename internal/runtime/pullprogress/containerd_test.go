package pullprogress

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seed-kubelet/kubelet/internal/runtime/pullprogress/contentv1"
)

// contentStore answers as containerd's content service does for the
// filters the sampler sends, from a scripted store.
type contentStore struct {
	contentv1.UnimplementedContentServer
	mu       sync.Mutex
	infos    []*contentv1.Info
	blobs    map[string][]byte
	statuses []*contentv1.Status
	filters  [][]string
	reads    int
}

func (s *contentStore) List(req *contentv1.ListContentRequest, stream grpc.ServerStreamingServer[contentv1.ListContentResponse]) error {
	if err := checkNamespace(stream.Context()); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.filters = append(s.filters, req.GetFilters())
	var out []*contentv1.Info
	for _, info := range s.infos {
		for _, f := range req.GetFilters() {
			if matches(info, f) {
				out = append(out, info)
				break
			}
		}
	}
	// In two messages, as containerd chunks long listings.
	half := len(out) / 2
	if err := stream.Send(&contentv1.ListContentResponse{Info: out[:half]}); err != nil {
		return err
	}
	return stream.Send(&contentv1.ListContentResponse{Info: out[half:]})
}

// matches evaluates the two kinds of filters the sampler sends: label
// presence (comma-joined: all of them) and digest equality.
func matches(info *contentv1.Info, filter string) bool {
	if d, ok := strings.CutPrefix(filter, "digest=="); ok {
		return `"`+info.GetDigest()+`"` == d
	}
	for _, part := range strings.Split(filter, ",") {
		key, ok := strings.CutPrefix(part, "labels.")
		if !ok {
			return false
		}
		if _, ok := info.GetLabels()[strings.Trim(key, `"`)]; !ok {
			return false
		}
	}
	return true
}

func (s *contentStore) Read(req *contentv1.ReadContentRequest, stream grpc.ServerStreamingServer[contentv1.ReadContentResponse]) error {
	s.mu.Lock()
	data := s.blobs[req.GetDigest()]
	s.reads++
	s.mu.Unlock()
	for i := 0; i < len(data); i += 100 {
		if err := stream.Send(&contentv1.ReadContentResponse{Offset: int64(i), Data: data[i:min(i+100, len(data))]}); err != nil {
			return err
		}
	}
	return nil
}

func (s *contentStore) ListStatuses(ctx context.Context, _ *contentv1.ListStatusesRequest) (*contentv1.ListStatusesResponse, error) {
	if err := checkNamespace(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &contentv1.ListStatusesResponse{Statuses: s.statuses}, nil
}

func checkNamespace(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if ns := md.Get("containerd-namespace"); !slices.Equal(ns, []string{"k8s.io"}) {
		return errors.New("namespace not k8s.io")
	}
	return nil
}

// serve serves srv (nil: a gRPC server without the content service) on a
// unix socket and returns its endpoint.
func serve(t *testing.T, srv *contentStore) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if srv != nil {
		contentv1.RegisterContentServer(s, srv)
	}
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return "unix://" + sock
}

func dial(t *testing.T, endpoint string) *Containerd {
	t.Helper()
	c, err := DialContainerd(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestContainerdSampler(t *testing.T) {
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(since.Add(d)) }
	const manifestJSON = `{"schemaVersion":2,"config":{"digest":"sha256:cfg","size":500},` +
		`"layers":[{"digest":"sha256:base","size":1000},{"digest":"sha256:big","size":40000},{"digest":"sha256:todo","size":9000}]}`
	store := &contentStore{
		blobs: map[string][]byte{"sha256:new": []byte(manifestJSON)},
		infos: []*contentv1.Info{
			// The manifest of this pull, and an older one of the same
			// repository (another tag), pulled before.
			{Digest: "sha256:new", Size: int64(len(manifestJSON)), CreatedAt: ts(time.Second), Labels: map[string]string{
				"containerd.io/distribution.source.localhost": "other,big", configLabel: "sha256:cfg"}},
			{Digest: "sha256:old", CreatedAt: ts(-time.Hour), Labels: map[string]string{
				"containerd.io/distribution.source.localhost": "big", configLabel: "sha256:x"}},
			// Another repository's manifest on the same host.
			{Digest: "sha256:elsewhere", CreatedAt: ts(2 * time.Second), Labels: map[string]string{
				"containerd.io/distribution.source.localhost": "bigger", configLabel: "sha256:y"}},
			{Digest: "sha256:cfg", Size: 500, CreatedAt: ts(2 * time.Second)},
			{Digest: "sha256:base", Size: 1000, CreatedAt: ts(-time.Hour)},
		},
		statuses: []*contentv1.Status{
			{Ref: "layer-sha256:big", Offset: 30000, Total: 40000},
			{Ref: "layer-sha256:unrelated", Offset: 5, Total: 10},
		},
	}
	c := dial(t, serve(t, store))
	sample := c.Sampler("localhost:5002/big:1", since)
	p, err := sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Progress{Total: 50500, Done: 31500, Fetched: 30500}); p != want {
		t.Errorf("progress %+v, want %+v", p, want)
	}
	wantFilters := []string{
		`labels."containerd.io/distribution.source.localhost",labels."containerd.io/gc.ref.content.config"`,
	}
	if got := store.filters[0]; !slices.Equal(got, wantFilters) {
		t.Errorf("manifest filters %q, want %q", got, wantFilters)
	}
	// The big layer is committed: the manifest is not read again.
	store.mu.Lock()
	store.infos = append(store.infos, &contentv1.Info{Digest: "sha256:big", Size: 40000, CreatedAt: ts(20 * time.Second)})
	store.statuses = store.statuses[1:]
	store.mu.Unlock()
	if p, err = sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := (Progress{Total: 50500, Done: 41500, Fetched: 40500}); p != want {
		t.Errorf("progress %+v, want %+v", p, want)
	}
	if store.reads != 1 {
		t.Errorf("manifest read %d times, want once", store.reads)
	}
}

func TestContainerdSamplerBeforeTheManifest(t *testing.T) {
	c := dial(t, serve(t, &contentStore{}))
	if _, err := c.Sampler("busybox", time.Now())(context.Background()); !errors.Is(err, ErrNotYet) {
		t.Errorf("err %v, want ErrNotYet", err)
	}
}

func TestContainerdSamplerWithoutContentService(t *testing.T) {
	c := dial(t, serve(t, nil))
	if _, err := c.Sampler("busybox", time.Now())(context.Background()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("err %v, want ErrUnsupported", err)
	}
}

func TestDistributionSource(t *testing.T) {
	for image, want := range map[string][2]string{
		"busybox":                            {"docker.io", "library/busybox"},
		"localhost:5000/team/app:1":          {"localhost", "team/app"},
		"registry.example.com/app@sha256:aa": {"registry.example.com", "app"},
		"[::1]:5000/app":                     {"::1", "app"},
	} {
		if h, r := distributionSource(image); h != want[0] || r != want[1] {
			t.Errorf("distributionSource(%q) = %q, %q, want %q", image, h, r, want)
		}
	}
}
