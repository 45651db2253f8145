package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/eviction"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
)

// evictionDeps is what the eviction manager is built from.
type evictionDeps struct {
	cfg      *kubeletconfig.KubeletConfiguration
	rootDir  string
	nodeName string
	clock    clock.WithTicker
	stats    *stats.Provider
	images   runtimeapi.ImageServiceClient
	pods     *podmanager.Manager
	workers  *podworkers.PodWorkers
	killer   *evictor
	recorder events.Recorder
	// onChange is called when the pressure conditions change.
	onChange func()
	// imageGC and containerGC reclaim disk before pods are evicted.
	imageGC     eviction.ImageGC
	containerGC eviction.ContainerGC
}

// newEvictionManager parses the eviction settings and builds the manager.
func newEvictionManager(d evictionDeps) (*eviction.Manager, error) {
	cfg := d.cfg
	thresholds, ignored, err := eviction.ParseThresholds(eviction.ThresholdConfig{
		Hard: cfg.EvictionHard, Soft: cfg.EvictionSoft, SoftGracePeriod: cfg.EvictionSoftGracePeriod,
		MinimumReclaim: cfg.EvictionMinimumReclaim, EnforceNodeAllocatable: cfg.EnforceNodeAllocatable,
	})
	if err != nil {
		return nil, fmt.Errorf("eviction thresholds: %w", err)
	}
	for _, s := range ignored {
		klog.InfoS("Eviction threshold ignored: the container filesystem follows the nodefs and imagefs thresholds", "signal", s)
	}
	mc := eviction.Config{
		Thresholds: thresholds, PressureTransitionPeriod: cfg.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds: int64(cfg.EvictionMaxPodGracePeriod),
		Summary:                  d.stats, Killer: d.killer, Recorder: d.recorder, Clock: d.clock,
		NodeRef: nodestatus.NodeRef(d.nodeName),
		ActivePods: func() []*v1.Pod {
			return evictablePods(d.pods.List(), d.workers.States())
		},
		DedicatedImageFs: func(ctx context.Context) (bool, error) {
			return dedicatedImageFs(ctx, d.rootDir, d.images)
		},
		KernelMemcgNotification: cfg.KernelMemcgNotification,
		MemoryCgroup:            "/sys/fs/cgroup/memory",
		OnConditionsChanged:     func([]v1.NodeConditionType) { d.onChange() },
		// localStorageCapacityIsolation: emptyDir sizeLimits and
		// ephemeral-storage limits evict, as upstream (default true).
		LocalStorageCapacityIsolation: cfg.LocalStorageCapacityIsolation == nil || *cfg.LocalStorageCapacityIsolation,
	}
	if d.imageGC != nil {
		mc.ImageGC = d.imageGC
	}
	if d.containerGC != nil {
		mc.ContainerGC = d.containerGC
	}
	return eviction.New(mc)
}

// evictablePods are the pods eviction may choose from: those whose worker is
// still syncing them (admitted, not being stopped).
func evictablePods(pods []*v1.Pod, states map[types.UID]podworkers.PodState) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if s, ok := states[p.UID]; ok && s.State == podworkers.Syncing {
			out = append(out, p)
		}
	}
	return out
}

// dedicatedImageFs reports whether the runtime's image filesystem is on a
// device other than the kubelet root directory's.
func dedicatedImageFs(ctx context.Context, rootDir string, images runtimeapi.ImageServiceClient) (bool, error) {
	resp, err := images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return false, err
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return false, fmt.Errorf("the runtime reports no image filesystem")
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

// evictor stops evicted pods through the pod workers and records their
// Evicted status; it waits for the worker to report them terminated.
type evictor struct {
	workers  *podworkers.PodWorkers
	statuses *statusmanager.Manager

	mu      sync.Mutex
	waiting map[types.UID]chan struct{}
}

var _ eviction.PodKiller = (*evictor)(nil)

func newEvictor(statuses *statusmanager.Manager) *evictor {
	return &evictor{statuses: statuses, waiting: map[types.UID]chan struct{}{}}
}

// terminated is the pod workers' OnTerminated hook.
func (e *evictor) terminated(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ch, ok := e.waiting[uid]; ok {
		close(ch)
		delete(e.waiting, uid)
	}
}

// podCleanupTimeout bounds the wait beyond the grace period, as upstream.
const podCleanupTimeout = 30 * time.Second

// EvictPod stores the Evicted status first (so no sync reports the pod
// otherwise), then asks its worker to stop it within gracePeriod.
func (e *evictor) EvictPod(ctx context.Context, p *v1.Pod, gracePeriod int64, st v1.PodStatus) error {
	done := make(chan struct{})
	e.mu.Lock()
	e.waiting[p.UID] = done
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.waiting, p.UID)
		e.mu.Unlock()
	}()
	cur, _ := e.statuses.Get(p.UID)
	cur.Phase, cur.Reason, cur.Message = st.Phase, st.Reason, st.Message
	var conds []v1.PodCondition
	for _, c := range cur.Conditions {
		if c.Type != v1.DisruptionTarget {
			conds = append(conds, c)
		}
	}
	cur.Conditions = append(conds, st.Conditions...)
	e.statuses.Set(p, cur)
	e.workers.UpdatePod(podworkers.Update{Pod: p, Type: podworkers.Kill, GracePeriod: &gracePeriod})
	if s, ok := e.workers.States()[p.UID]; ok && s.State == podworkers.Terminated {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(gracePeriod)*time.Second+podCleanupTimeout)
	defer cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pod %s not terminated in time: %w", klog.KObj(p), ctx.Err())
	}
}
