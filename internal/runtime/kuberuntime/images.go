package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/events"
)

// Image errors; their text is the waiting reason upstream reports.
var (
	ErrImagePull      = errors.New("ErrImagePull")
	ErrImagePullBack  = errors.New("ImagePullBackOff")
	ErrImageNeverPull = errors.New("ErrImageNeverPull")
	ErrImageInspect   = errors.New("ImageInspectError")
	ErrInvalidImage   = errors.New("InvalidImageName")
	ErrPullQPS        = errors.New("pull QPS exceeded")
)

// ImageConfig configures an ImagePuller.
type ImageConfig struct {
	Images runtimeapi.ImageServiceClient // required
	Clock  clock.Clock                   // required
	// Recorder receives Pulling/Pulled/Failed/BackOff events. Required.
	Recorder events.Recorder
	// SerializePulls allows one pull at a time (serializeImagePulls).
	SerializePulls bool
	// MaxParallelPulls bounds concurrent pulls when not serialized; 0 = no bound.
	MaxParallelPulls int
	// QPS and Burst rate-limit pulls (registryPullQPS/registryBurst); QPS 0 = no limit.
	QPS   float32
	Burst int
	// PullTimeout bounds one pull; zero means none beyond ctx.
	PullTimeout time.Duration
	// Progress, when set, updates the Pulling event while a pull runs.
	Progress PullProgress
}

// PullProgress reports how a pull goes while it runs
// (pullprogress.Reporter).
type PullProgress interface {
	// Watch starts reporting on the pull of image for pod, announced by a
	// Pulling event with message; stop ends it before the pull's outcome
	// is recorded.
	Watch(pod *v1.Pod, image, message string) (stop func())
}

// ImagePuller makes sure a container's image is present, by its pull policy,
// with back-off after failed pulls.
type ImagePuller struct {
	cfg     ImageConfig
	backoff *flowcontrol.Backoff
	mu      sync.Mutex
	lastErr map[string]pullFailure // last pull failure per back-off key
	slots   chan struct{}
	limiter flowcontrol.RateLimiter
}

// NewImagePuller returns an ImagePuller.
func NewImagePuller(cfg ImageConfig) *ImagePuller {
	p := &ImagePuller{cfg: cfg, backoff: backoff.NewImagePull(cfg.Clock), lastErr: map[string]pullFailure{}}
	switch {
	case cfg.SerializePulls:
		p.slots = make(chan struct{}, 1)
	case cfg.MaxParallelPulls > 0:
		p.slots = make(chan struct{}, cfg.MaxParallelPulls)
	}
	if cfg.QPS > 0 {
		burst := cfg.Burst
		if burst < 1 {
			burst = 1
		}
		p.limiter = flowcontrol.NewTokenBucketRateLimiterWithClock(cfg.QPS, burst, cfg.Clock)
	}
	return p
}

// PullCredentials supplies registry credentials for an image: pull
// secrets, the node's, credential provider plugins. A non-nil error says
// which source failed; the others' credentials are still returned.
type PullCredentials func(ctx context.Context, pod *v1.Pod, image string) ([]*runtimeapi.AuthConfig, error)

// EnsureImage returns the image reference the runtime knows the container's
// image by, pulling it when the policy says so; creds (may be nil) is only
// asked when it pulls. Errors wrap the Err* values.
func (p *ImagePuller) EnsureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig, creds PullCredentials) (string, error) {
	image := c.Image
	if image == "" || strings.TrimSpace(image) != image {
		// As upstream, which fails the same names while parsing them.
		msg := fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", image, image)
		p.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.InspectFailed, "%s", msg)
		return "", fmt.Errorf("%w: %s", ErrInvalidImage, msg)
	}
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}
	present, err := p.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		p.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.InspectFailed, "Failed to inspect image %q: %v", image, err)
		return "", fmt.Errorf("%w: Failed to inspect image %q: %v", ErrImageInspect, image, err)
	}
	ref := present.GetImage().GetId()
	policy := c.ImagePullPolicy
	if ref != "" && policy != v1.PullAlways {
		p.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.Pulled, "Container image %q already present on machine", image)
		return ref, nil
	}
	if policy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		p.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.ErrImageNeverPull, "%s", msg)
		return "", fmt.Errorf("%w: %s", ErrImageNeverPull, msg)
	}
	key := pullKey(pod, image)
	p.mu.Lock()
	last := p.lastErr[key]
	p.mu.Unlock()
	if backoff.Remaining(p.backoff, key, last.at) > 0 {
		p.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.BackOff, "Back-off pulling image %q", image)
		return "", fmt.Errorf("%w: Back-off pulling image %q: %s", ErrImagePullBack, image, last.msg)
	}
	ref, err = p.pull(ctx, pod, spec, sandbox, creds)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		now := p.cfg.Clock.Now()
		p.backoff.Next(key, now)
		p.lastErr[key] = pullFailure{msg: err.Error(), at: now}
		return "", err
	}
	p.backoff.Reset(key)
	delete(p.lastErr, key)
	return ref, nil
}

// RetryAfter is how long until a pull of image for pod may be tried again.
func (p *ImagePuller) RetryAfter(pod *v1.Pod, image string) time.Duration {
	key := pullKey(pod, image)
	p.mu.Lock()
	last := p.lastErr[key]
	p.mu.Unlock()
	return backoff.Remaining(p.backoff, key, last.at)
}

// pullFailure is the last failed pull of a back-off key: its message and
// when it failed (the back-off runs from then, as upstream's
// IsInBackOffSinceUpdate).
type pullFailure struct {
	msg string
	at  time.Time
}

func pullKey(pod *v1.Pod, image string) string { return string(pod.UID) + "/" + image }

func (p *ImagePuller) pull(ctx context.Context, pod *v1.Pod, spec *runtimeapi.ImageSpec, sandbox *runtimeapi.PodSandboxConfig, lookup PullCredentials) (string, error) {
	image := spec.Image
	pulling := fmt.Sprintf("Pulling image %q", image)
	p.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.Pulling, "%s", pulling)
	if p.limiter != nil && !p.limiter.TryAccept() {
		// As upstream, whose throttled image service fails the pull after
		// the Pulling event.
		p.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Failed to pull image %q: %v", image, ErrPullQPS)
		return "", fmt.Errorf("%w: %w", ErrImagePull, ErrPullQPS)
	}
	queued := p.cfg.Clock.Now()
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			defer func() { <-p.slots }()
		case <-ctx.Done():
			return "", fmt.Errorf("%w: %v", ErrImagePull, ctx.Err())
		}
	}
	started := p.cfg.Clock.Now()
	if p.cfg.PullTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.PullTimeout)
		defer cancel()
	}
	var creds []*runtimeapi.AuthConfig
	var credsErr error
	if lookup != nil {
		creds, credsErr = lookup(ctx, pod, image)
	}
	stopProgress := func() {}
	if p.cfg.Progress != nil {
		stopProgress = p.cfg.Progress.Watch(pod, image, pulling)
	}
	resp, err := p.pullWithCreds(ctx, spec, sandbox, creds)
	stopProgress()
	if err != nil {
		if credsErr != nil {
			// Say why credentials may be missing (a failed plugin).
			err = fmt.Errorf("%w (%v)", err, credsErr)
		}
		klog.V(2).InfoS("Image pull failed", "pod", klog.KObj(pod), "image", image, "err", err)
		p.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Failed to pull image %q: %v", image, err)
		return "", fmt.Errorf("%w: failed to pull and unpack image %q: %v", ErrImagePull, image, err)
	}
	size := ""
	if st, err := p.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec}); err == nil && st.GetImage() != nil {
		size = fmt.Sprintf(" Image size: %d bytes.", st.GetImage().GetSize())
	}
	now := p.cfg.Clock.Now()
	p.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.Pulled, "Successfully pulled image %q in %v (%v including waiting).%s",
		image, now.Sub(started).Round(time.Millisecond), now.Sub(queued).Round(time.Millisecond), size)
	return resp.GetImageRef(), nil
}

// pullWithCreds pulls anonymously when there are no credentials, else with
// each credential in turn until one works; it returns the last error.
func (p *ImagePuller) pullWithCreds(ctx context.Context, spec *runtimeapi.ImageSpec, sandbox *runtimeapi.PodSandboxConfig, creds []*runtimeapi.AuthConfig) (*runtimeapi.PullImageResponse, error) {
	auths := creds
	if len(auths) == 0 {
		auths = []*runtimeapi.AuthConfig{nil}
	}
	var lastErr error
	for _, auth := range auths {
		resp, err := p.cfg.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, Auth: auth, SandboxConfig: sandbox})
		if err == nil {
			return resp, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
