package cri

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
)

// Start-up and health polling delays.
const (
	versionRetryInitial = 500 * time.Millisecond
	versionRetryMax     = 30 * time.Second
	// HealthPeriod is how often Health asks a healthy runtime's Status.
	HealthPeriod = 5 * time.Second
	// UnhealthyPeriod is how often it asks while the runtime is unhealthy,
	// so that its return is seen (and the node reported Ready) at once.
	UnhealthyPeriod = time.Second
)

// VersionClient is the part of the runtime service WaitForRuntime asks.
type VersionClient interface {
	Version(ctx context.Context, in *runtimeapi.VersionRequest, opts ...grpc.CallOption) (*runtimeapi.VersionResponse, error)
}

// StatusClient is the part of the runtime service Health and SandboxImage ask.
type StatusClient interface {
	Status(ctx context.Context, in *runtimeapi.StatusRequest, opts ...grpc.CallOption) (*runtimeapi.StatusResponse, error)
}

var (
	_ VersionClient = (runtimeapi.RuntimeServiceClient)(nil)
	_ StatusClient  = (runtimeapi.RuntimeServiceClient)(nil)
)

// WaitForRuntime asks the runtime's Version until it answers, waiting
// 0.5s, 1s, 2s, ... up to 30s between tries, or until ctx ends.
func WaitForRuntime(ctx context.Context, rs VersionClient, clk clock.Clock) (*runtimeapi.VersionResponse, error) {
	delays := backoff.Doubling(versionRetryInitial, versionRetryMax)
	for {
		v, err := rs.Version(ctx, &runtimeapi.VersionRequest{})
		if err == nil {
			return v, nil
		}
		delay := delays.Step()
		klog.ErrorS(err, "Container runtime is not reachable yet, retrying", "after", delay)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("container runtime never became reachable: %w", err)
		case <-clk.After(delay):
		}
	}
}

// HealthConfig configures a Health.
type HealthConfig struct {
	Runtime StatusClient // required
	Clock   clock.Clock  // required
}

// Health keeps the runtime's last health, polled every HealthPeriod (every
// UnhealthyPeriod while unhealthy), for /healthz and the node's Ready
// condition.
type Health struct {
	cfg     HealthConfig
	mu      sync.Mutex
	last    error
	changed chan struct{}
}

// NewHealth returns a Health that reports healthy until Run first asks.
func NewHealth(cfg HealthConfig) *Health { return &Health{cfg: cfg, changed: make(chan struct{}, 1)} }

// Changed receives a value after the runtime turned healthy or unhealthy
// (changes not read yet coalesce into one), so the node status can be sent
// at once.
func (h *Health) Changed() <-chan struct{} { return h.changed }

// HealthCheck returns why the runtime is unhealthy, or nil.
func (h *Health) HealthCheck() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Run polls until ctx ends.
func (h *Health) Run(ctx context.Context) {
	for {
		err := StatusError(h.cfg.Runtime.Status(ctx, &runtimeapi.StatusRequest{}))
		h.mu.Lock()
		flipped := (err == nil) != (h.last == nil)
		h.last = err
		h.mu.Unlock()
		if flipped {
			klog.V(2).InfoS("Container runtime health changed", "healthy", err == nil, "err", err)
			select {
			case h.changed <- struct{}{}:
			default:
			}
		}
		period := HealthPeriod
		if err != nil {
			period = UnhealthyPeriod
		}
		select {
		case <-ctx.Done():
			return
		case <-h.cfg.Clock.After(period):
		}
	}
}

// StatusError turns a Status answer into the runtime's health: nil when
// it answered and says it is ready. Pure.
func StatusError(resp *runtimeapi.StatusResponse, err error) error {
	if err != nil {
		return fmt.Errorf("container runtime is down: %w", err)
	}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady && !c.Status {
			return fmt.Errorf("container runtime is not ready: %s: %s", c.Reason, c.Message)
		}
	}
	return nil
}
