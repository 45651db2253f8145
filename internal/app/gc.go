package app

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/containergc"
	"github.com/seed-kubelet/kubelet/internal/node/imagegc"
	"github.com/seed-kubelet/kubelet/internal/node/logrotate"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

// newLogRotation builds the container log manager from containerLogMaxSize,
// containerLogMaxFiles, containerLogMaxWorkers and containerLogMonitorInterval.
func newLogRotation(cfg *kubeletconfig.KubeletConfiguration, rs logrotate.Runtime, clk clock.WithTicker) (*logrotate.Manager, error) {
	q, err := resource.ParseQuantity(cfg.ContainerLogMaxSize)
	if err != nil {
		return nil, fmt.Errorf("failed to parse container log max size %q: %w", cfg.ContainerLogMaxSize, err)
	}
	maxSize, ok := q.AsInt64()
	if !ok {
		return nil, fmt.Errorf("invalid container log max size %q", cfg.ContainerLogMaxSize)
	}
	p := logrotate.Policy{MaxSize: maxSize, MaxFiles: int(derefInt32(cfg.ContainerLogMaxFiles))}
	interval := cfg.ContainerLogMonitorInterval
	m, err := logrotate.New(logrotate.Config{
		Runtime: rs, Clock: clk, Policy: p, Workers: int(derefInt32(cfg.ContainerLogMaxWorkers)),
		Interval: interval.Duration,
	})
	if err != nil {
		return nil, fmt.Errorf("container log manager: %w", err)
	}
	return m, nil
}

// newImageGC builds the image garbage collector from the image GC fields.
func newImageGC(cfg *kubeletconfig.KubeletConfiguration, images imagegc.Images, rs imagegc.Runtime, clk clock.WithTicker, rec events.Recorder, nodeName string) (*imagegc.Manager, error) {
	return imagegc.New(imagegc.Config{
		Images: images, Runtime: rs, Clock: clk, Recorder: rec, NodeRef: nodestatus.NodeRef(nodeName),
		Policy: imagegc.Policy{
			HighThresholdPercent: int(derefInt32(cfg.ImageGCHighThresholdPercent)),
			LowThresholdPercent:  int(derefInt32(cfg.ImageGCLowThresholdPercent)),
			MinAge:               cfg.ImageMinimumGCAge.Duration,
			MaxAge:               cfg.ImageMaximumGCAge.Duration,
		},
	})
}

// containerGCPolicy is the policy of the container GC flags.
func containerGCPolicy(f options.KubeletFlags) containergc.Policy {
	return containergc.Policy{
		MinAge: f.MinimumGCAge, MaxPerPodContainer: int(f.MaxPerPodContainerCount), MaxContainers: int(f.MaxContainerCount),
	}
}

// podGCState answers the container GC's questions about pods from the pod
// manager, the pod workers and the status manager.
type podGCState struct {
	pods     *podmanager.Manager
	workers  *podworkers.PodWorkers
	statuses *statusmanager.Manager
}

var _ containergc.PodState = (*podGCState)(nil)

func (s *podGCState) ShouldPodContentBeRemoved(uid types.UID) bool {
	if st, ok := s.statuses.Get(uid); ok && st.Phase == v1.PodFailed && st.Reason == "Evicted" {
		return true
	}
	if w, ok := s.workers.States()[uid]; ok {
		return w.Removed && w.State == podworkers.Terminated
	}
	_, known := s.pods.Get(uid)
	return !known
}

func (s *podGCState) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	if w, ok := s.workers.States()[uid]; ok {
		return w.State == podworkers.Terminated
	}
	_, known := s.pods.Get(uid)
	return !known
}

// startGarbageCollection runs the container GC, the image GC and the log
// rotation until ctx ends.
func startGarbageCollection(ctx context.Context, cgc *containergc.GC, igc *imagegc.Manager, logs *logrotate.Manager) {
	go cgc.Run(ctx)
	go igc.Run(ctx)
	go logs.Run(ctx)
}
