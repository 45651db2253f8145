package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/runtime/cri"
)

// Period is how often images are collected, as upstream's ImageGCPeriod.
const Period = 5 * time.Minute

// Upstream's node event reasons.
const (
	ImageGCFailed       = "ImageGCFailed"
	FreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	InvalidDiskCapacity = "InvalidDiskCapacity"
)

// Reasons of kubelet_image_garbage_collected_total.
const (
	reasonAge   = "age"
	reasonSpace = "space"
)

// Images is the part of the CRI image service the GC uses.
type Images interface {
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
	RemoveImage(ctx context.Context, in *runtimeapi.RemoveImageRequest, opts ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error)
	ImageFsInfo(ctx context.Context, in *runtimeapi.ImageFsInfoRequest, opts ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error)
}

// Runtime is the part of the CRI runtime service the GC uses.
type Runtime interface {
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	Status(ctx context.Context, in *runtimeapi.StatusRequest, opts ...grpc.CallOption) (*runtimeapi.StatusResponse, error)
}

var (
	_ Images  = (runtimeapi.ImageServiceClient)(nil)
	_ Runtime = (runtimeapi.RuntimeServiceClient)(nil)
)

// Config is what a Manager needs.
type Config struct {
	Images  Images           // required
	Runtime Runtime          // required
	Clock   clock.WithTicker // required
	Policy  Policy
	// FsStats returns the image filesystem's capacity and available bytes;
	// nil means statfs of the mountpoint the runtime's ImageFsInfo names.
	FsStats func(ctx context.Context) (capacity, available int64, err error)
	// Recorder and NodeRef receive the node events; may be nil.
	Recorder events.Recorder
	NodeRef  runtime.Object
	// Metrics counts the images removed; nil means a private set nobody
	// serves.
	Metrics *metrics.Metrics
}

// Manager collects unused images.
type Manager struct {
	cfg     Config
	began   time.Time
	mu      sync.Mutex // guards records; one collection at a time
	records map[string]Record
}

// New returns a Manager, or an error for an invalid policy.
func New(cfg Config) (*Manager, error) {
	p := cfg.Policy
	if cfg.Images == nil || cfg.Runtime == nil || cfg.Clock == nil {
		return nil, errors.New("imagegc: Images, Runtime and Clock are required")
	}
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		return nil, fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]", p.HighThresholdPercent)
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		return nil, fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]", p.LowThresholdPercent)
	}
	if p.LowThresholdPercent > p.HighThresholdPercent {
		return nil, fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", p.LowThresholdPercent, p.HighThresholdPercent)
	}
	if cfg.FsStats == nil {
		cfg.FsStats = imageFsStats(cfg.Images)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	return &Manager{cfg: cfg, began: cfg.Clock.Now(), records: map[string]Record{}}, nil
}

// Run detects images now and collects at once and then every Period until
// ctx ends. A failure right after start is only logged (the runtime may
// not report its filesystem yet); a repeated one is an ImageGCFailed event.
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.Policy.HighThresholdPercent == 100 && m.cfg.Policy.MaxAge == 0 {
		klog.V(2).InfoS("ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC")
		return
	}
	t := m.cfg.Clock.NewTicker(Period)
	defer t.Stop()
	prevFailed := false
	for {
		if err := m.GarbageCollect(ctx); err != nil {
			if prevFailed {
				klog.ErrorS(err, "Image garbage collection failed multiple times in a row")
				m.event(ImageGCFailed, err.Error())
			} else {
				klog.ErrorS(err, "Image garbage collection failed once. Stats initialization may not have completed yet")
			}
			prevFailed = true
		} else {
			if prevFailed {
				klog.InfoS("Image garbage collection succeeded")
			} else {
				klog.V(4).InfoS("Image garbage collection succeeded")
			}
			prevFailed = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (m *Manager) event(reason, msg string) {
	if m.cfg.Recorder != nil && m.cfg.NodeRef != nil {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeWarning, reason, "%s", msg)
	}
}

// GarbageCollect is one periodic pass: images unused for MaxAge, then, if
// usage is at the high threshold, enough images for the low threshold.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	candidates, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	var errs []error
	if old := SelectForAge(candidates, m.cfg.Policy, now, m.began); len(old) > 0 {
		gone := map[string]bool{}
		for _, r := range old {
			if err := m.remove(ctx, r, reasonAge); err != nil {
				errs = append(errs, err)
				continue
			}
			gone[r.ID] = true
		}
		candidates = without(candidates, gone)
		if len(errs) > 0 {
			return fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.cfg.Policy.MaxAge, errors.Join(errs...))
		}
	}
	capacity, available, err := m.cfg.FsStats(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem stats: %w", err)
	}
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.event(InvalidDiskCapacity, err.Error())
		return err
	}
	toFree := BytesToFree(capacity, available, m.cfg.Policy)
	if toFree <= 0 {
		return nil
	}
	klog.InfoS("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", UsagePercent(capacity, available), "highThreshold", m.cfg.Policy.HighThresholdPercent,
		"amountToFree", toFree, "lowThreshold", m.cfg.Policy.LowThresholdPercent)
	freed, err := m.free(ctx, candidates, now, toFree)
	if err != nil {
		return err
	}
	if freed < toFree {
		msg := fmt.Sprintf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", toFree, freed)
		m.event(FreeDiskSpaceFailed, msg)
		return errors.New(msg)
	}
	return nil
}

// DeleteUnusedImages removes every unused image older than MinAge (the
// eviction manager's reclaim) and returns the bytes freed.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	klog.InfoS("Attempting to delete unused images")
	now := m.cfg.Clock.Now()
	candidates, err := m.detect(ctx, now)
	if err != nil {
		return 0, err
	}
	return m.free(ctx, candidates, now, math.MaxInt64)
}

func (m *Manager) free(ctx context.Context, candidates []Record, now time.Time, bytes int64) (int64, error) {
	var freed int64
	var errs []error
	for _, r := range SelectForSpace(candidates, m.cfg.Policy, now, bytes) {
		if err := m.remove(ctx, r, reasonSpace); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += r.Size
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytes, freed, errors.Join(errs...))
	}
	return freed, nil
}

func (m *Manager) remove(ctx context.Context, r Record, reason string) error {
	klog.InfoS("Removing image to free bytes", "imageID", r.ID, "size", r.Size, "reason", reason)
	if _, err := m.cfg.Images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: r.ID}}); err != nil {
		return fmt.Errorf("remove image %s: %w", r.ID, err)
	}
	delete(m.records, r.ID)
	m.cfg.Metrics.ImageGarbageCollected.WithLabelValues(reason).Inc()
	return nil
}

// detect lists images and containers, updates the records, and returns
// the removable images in eviction order. Callers hold mu.
func (m *Manager) detect(ctx context.Context, now time.Time) ([]Record, error) {
	iresp, err := m.cfg.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	cresp, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	refs := map[string]bool{}
	for _, c := range cresp.GetContainers() {
		refs[c.GetImageRef()] = true
		refs[c.GetImage().GetImage()] = true
	}
	sandbox := m.sandboxImage(ctx)
	var images []Image
	inUse, keep := map[string]bool{}, map[string]bool{}
	for _, img := range iresp.GetImages() {
		id := img.GetId()
		images = append(images, Image{ID: id, RepoTags: img.GetRepoTags(), Size: int64(img.GetSize()), Pinned: img.GetPinned()})
		names := append([]string{id}, img.GetRepoTags()...)
		names = append(names, img.GetRepoDigests()...)
		for _, n := range names {
			if refs[n] {
				inUse[id] = true
			}
			if sandbox != "" && n == sandbox {
				keep[id] = true
			}
		}
	}
	m.records = Records(m.records, images, inUse, now, now)
	return EvictionOrder(m.records, inUse, keep), nil
}

// sandboxImage is the image the runtime runs sandboxes from, which it may
// not pin (containerd 1.6); "" when the runtime does not say.
func (m *Manager) sandboxImage(ctx context.Context) string {
	img, err := cri.SandboxImage(ctx, m.cfg.Runtime)
	if err != nil {
		return ""
	}
	return img
}

func without(rs []Record, gone map[string]bool) []Record {
	out := rs[:0:0]
	for _, r := range rs {
		if !gone[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// imageFsStats reads the image filesystem's size with statfs of the
// mountpoint the runtime reports (the runtime gives only its usage).
func imageFsStats(images Images) func(ctx context.Context) (int64, int64, error) {
	return func(ctx context.Context) (int64, int64, error) {
		resp, err := images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
		if err != nil {
			return 0, 0, fmt.Errorf("image filesystem info: %w", err)
		}
		fss := resp.GetImageFilesystems()
		if len(fss) == 0 {
			return 0, 0, errors.New("the runtime reports no image filesystem")
		}
		path := fss[0].GetFsId().GetMountpoint()
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
		}
		return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
	}
}
