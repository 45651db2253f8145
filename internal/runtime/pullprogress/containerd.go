package pullprogress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seed-kubelet/kubelet/internal/runtime/cri"
	"github.com/seed-kubelet/kubelet/internal/runtime/imageref"
	"github.com/seed-kubelet/kubelet/internal/runtime/pullprogress/contentv1"
)

// What containerd's CRI plugin and its pulls write into the content store.
const (
	// criNamespace is the containerd namespace of the CRI plugin's images.
	criNamespace = "k8s.io"
	// namespaceHeader selects the namespace of a containerd API call.
	namespaceHeader = "containerd-namespace"
	// sourceLabel + "." + registry host (without port) lists, comma
	// separated, the repositories a blob was pulled from.
	sourceLabel = "containerd.io/distribution.source"
	// configLabel marks a manifest: it names the image config it refers to.
	configLabel = "containerd.io/gc.ref.content.config"
	// maxManifestSize bounds the manifest we read (containerd's own limit).
	maxManifestSize = 4 << 20
	// clockSlack allows for the manifest's update time and ours to be read
	// from different clocks.
	clockSlack = 2 * time.Second
)

// Containerd reads pull progress from containerd's content service, which
// containerd serves on the socket of its CRI.
type Containerd struct {
	content contentv1.ContentClient
	conn    *grpc.ClientConn
}

var _ Source = (*Containerd)(nil)

// DialContainerd connects to the content service on the image service
// endpoint (a unix socket, as the CRI endpoints). It does not wait for an
// answer: a runtime without the service fails the first sample with
// ErrUnsupported.
func DialContainerd(endpoint string) (*Containerd, error) {
	target, err := cri.Target(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to %q: %w", endpoint, err)
	}
	return &Containerd{content: contentv1.NewContentClient(conn), conn: conn}, nil
}

// Close closes the connection.
func (c *Containerd) Close() error { return c.conn.Close() }

// Sampler returns the sampler of the pull of image that started at since.
// It finds the image's manifest by the repository containerd records on
// every blob it pulls (the distribution source label) among manifests
// written or relabelled since the pull started, reads its blob sizes once,
// and then counts committed blobs and the offsets of active ingests.
func (c *Containerd) Sampler(image string, since time.Time) Sampler {
	host, repo := distributionSource(image)
	var manifest string
	var blobs []Blob
	return func(ctx context.Context) (Progress, error) {
		ctx = metadata.AppendToOutgoingContext(ctx, namespaceHeader, criNamespace)
		m, err := c.latestManifest(ctx, host, repo, since)
		if err != nil {
			return Progress{}, classify(err)
		}
		if m == "" {
			return Progress{}, ErrNotYet
		}
		if m != manifest {
			if blobs, err = c.readManifest(ctx, m); err != nil {
				return Progress{}, classify(err)
			}
			manifest = m
		}
		stored, err := c.stored(ctx, blobs)
		if err != nil {
			return Progress{}, classify(err)
		}
		return Measure(blobs, stored, since), nil
	}
}

// distributionSource returns the host and repository containerd labels the
// image's blobs with: "localhost:5000/app:1" gives "localhost" and "app",
// "busybox" gives "docker.io" and "library/busybox".
func distributionSource(image string) (host, repo string) {
	full := imageref.Repository(image)
	u, err := url.Parse("dummy://" + full)
	if err != nil {
		h, r, _ := strings.Cut(full, "/")
		return h, r
	}
	return u.Hostname(), strings.TrimPrefix(u.Path, "/")
}

// latestManifest returns the digest of the most recently written (or
// relabelled) manifest pulled from repo on host since the pull started, or
// "".
func (c *Containerd) latestManifest(ctx context.Context, host, repo string, since time.Time) (string, error) {
	key := sourceLabel + "." + host
	filter := "labels." + strconv.Quote(key) + ",labels." + strconv.Quote(configLabel)
	stream, err := c.content.List(ctx, &contentv1.ListContentRequest{Filters: []string{filter}})
	if err != nil {
		return "", err
	}
	var best string
	var bestAt time.Time
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return best, nil
		}
		if err != nil {
			return "", err
		}
		for _, info := range resp.GetInfo() {
			// containerd 1.6 leaves UpdatedAt out of listings.
			at := info.GetCreatedAt().AsTime()
			if u := info.GetUpdatedAt(); u != nil && u.AsTime().After(at) {
				at = u.AsTime()
			}
			if at.Before(since.Add(-clockSlack)) || !slices.Contains(strings.Split(info.GetLabels()[key], ","), repo) {
				continue
			}
			if best == "" || at.After(bestAt) {
				best, bestAt = info.GetDigest(), at
			}
		}
	}
}

// manifest is what we read of an image manifest (OCI or Docker schema 2).
type manifest struct {
	Config struct {
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"config"`
	Layers []struct {
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"layers"`
}

// readManifest reads the manifest with digest and returns its config and
// layers.
func (c *Containerd) readManifest(ctx context.Context, digest string) ([]Blob, error) {
	stream, err := c.content.Read(ctx, &contentv1.ReadContentRequest{Digest: digest})
	if err != nil {
		return nil, err
	}
	var data []byte
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if data = append(data, resp.GetData()...); len(data) > maxManifestSize {
			return nil, fmt.Errorf("manifest %s is larger than %d bytes", digest, maxManifestSize)
		}
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", digest, err)
	}
	blobs := []Blob{{Digest: m.Config.Digest, Size: m.Config.Size}}
	for _, l := range m.Layers {
		blobs = append(blobs, Blob{Digest: l.Digest, Size: l.Size})
	}
	return blobs, nil
}

// stored returns what the content store holds of blobs: the committed
// ones, and the offsets of those being written.
func (c *Containerd) stored(ctx context.Context, blobs []Blob) (map[string]Stored, error) {
	filters := make([]string, 0, len(blobs))
	for _, b := range blobs {
		filters = append(filters, "digest=="+strconv.Quote(b.Digest))
	}
	out := make(map[string]Stored, len(blobs))
	stream, err := c.content.List(ctx, &contentv1.ListContentRequest{Filters: filters})
	if err != nil {
		return nil, err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, info := range resp.GetInfo() {
			out[info.GetDigest()] = Stored{Committed: true, CommittedAt: info.GetCreatedAt().AsTime()}
		}
	}
	ingests, err := c.content.ListStatuses(ctx, &contentv1.ListStatusesRequest{})
	if err != nil {
		return nil, err
	}
	for _, st := range ingests.GetStatuses() {
		for _, b := range blobs {
			if _, done := out[b.Digest]; done {
				continue
			}
			// Pulls name an ingest "layer-<digest>", "config-<digest>", ...
			if st.GetExpected() == b.Digest || strings.HasSuffix(st.GetRef(), "-"+b.Digest) {
				out[b.Digest] = Stored{Offset: st.GetOffset()}
			}
		}
	}
	return out, nil
}

// classify turns a refusal of the content service into ErrUnsupported:
// another runtime on the socket, or one that does not let us in.
func classify(err error) error {
	switch status.Code(err) {
	case codes.Unimplemented, codes.PermissionDenied, codes.Unauthenticated:
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return err
}
