package containergc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/logrotate"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// Period is how often the GC runs, as upstream's ContainerGCPeriod.
const Period = time.Minute

// ContainerGCFailed is upstream's node event reason for a failed pass.
const ContainerGCFailed = "ContainerGCFailed"

// Runtime is the part of the CRI runtime service the GC uses; the
// generated gRPC client satisfies it.
type Runtime interface {
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
	RemoveContainer(ctx context.Context, in *runtimeapi.RemoveContainerRequest, opts ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error)
	RemovePodSandbox(ctx context.Context, in *runtimeapi.RemovePodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error)
}

var _ Runtime = (runtimeapi.RuntimeServiceClient)(nil)

// PodState tells the GC what the kubelet knows of a pod.
type PodState interface {
	// ShouldPodContentBeRemoved: deleted (or evicted) and terminated, or unknown.
	ShouldPodContentBeRemoved(uid types.UID) bool
	// ShouldPodRuntimeBeRemoved: terminated, or unknown.
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
}

// Config is what a GC needs.
type Config struct {
	Runtime Runtime          // required
	Pods    PodState         // required
	Clock   clock.WithTicker // required
	Policy  Policy
	// SourcesReady reports every pod source seen; nil means always.
	SourcesReady func() bool
	// PodLogsDir is podLogsDir (/var/log/pods).
	PodLogsDir string
	// ContainerLogsDir holds the /var/log/containers links; "" for none.
	ContainerLogsDir string
	// CleanLogs removes a container's log files (the log manager's Clean,
	// serialized with rotation); nil removes them here.
	CleanLogs func(ctx context.Context, containerID string) error
	// Recorder and NodeRef receive ContainerGCFailed; may be nil.
	Recorder events.Recorder
	NodeRef  runtime.Object
}

// GC removes dead containers, sandboxes and logs.
type GC struct {
	cfg Config
	mu  sync.Mutex // one pass at a time
}

// New returns a GC.
func New(cfg Config) *GC {
	return &GC{cfg: cfg}
}

// Run collects every Period until ctx ends, recording ContainerGCFailed on
// the node when a pass fails.
func (g *GC) Run(ctx context.Context) {
	t := g.cfg.Clock.NewTicker(Period)
	defer t.Stop()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := g.GarbageCollect(ctx); err != nil {
			klog.ErrorS(err, "Container garbage collection failed")
			if g.cfg.Recorder != nil && g.cfg.NodeRef != nil {
				g.cfg.Recorder.Eventf(g.cfg.NodeRef, v1.EventTypeWarning, ContainerGCFailed, "%s", err.Error())
			}
			failed = true
			continue
		}
		if failed {
			klog.InfoS("Container garbage collection succeeded")
			failed = false
		} else {
			klog.V(4).InfoS("Container garbage collection succeeded")
		}
	}
}

// GarbageCollect is one periodic pass.
func (g *GC) GarbageCollect(ctx context.Context) error {
	return g.collect(ctx, false)
}

// DeleteAllUnusedContainers is the eviction manager's pass: it also removes
// every dead container and sandbox of terminated pods.
func (g *GC) DeleteAllUnusedContainers(ctx context.Context) error {
	return g.collect(ctx, true)
}

func (g *GC) collect(ctx context.Context, evictNonDeleted bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	cs, sbs, err := g.list(ctx)
	if err != nil {
		return err
	}
	ready := g.cfg.SourcesReady == nil || g.cfg.SourcesReady()
	plan := Decide(Input{
		Policy: g.cfg.Policy, Now: g.cfg.Clock.Now(), Containers: cs, Sandboxes: sbs,
		AllSourcesReady: ready, EvictNonDeletedPods: evictNonDeleted,
		ContentRemovable: g.cfg.Pods.ShouldPodContentBeRemoved, RuntimeRemovable: g.cfg.Pods.ShouldPodRuntimeBeRemoved,
	})
	var errs []error
	for _, c := range plan.Containers {
		if err := g.RemoveContainer(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range plan.Sandboxes {
		klog.V(2).InfoS("Removing dead pod sandbox", "sandboxID", s.ID, "podUID", s.PodUID)
		if _, err := g.cfg.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.ID}); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", s.ID, err))
		}
	}
	if ready {
		errs = append(errs, g.removePodLogDirs()...)
	}
	g.removeDanglingLinks(cs)
	return errors.Join(errs...)
}

// list reads every container and sandbox the kubelet created.
func (g *GC) list(ctx context.Context) ([]Container, []Sandbox, error) {
	cresp, err := g.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", err)
	}
	sresp, err := g.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	var cs []Container
	for _, c := range cresp.GetContainers() {
		meta, err := criconfig.ContainerMetaFrom(c.GetLabels(), c.GetAnnotations())
		if err != nil {
			continue // not the kubelet's
		}
		cs = append(cs, Container{
			ID: c.GetId(), PodUID: meta.PodUID, PodName: meta.PodName, PodNamespace: meta.PodNamespace,
			Name: meta.ContainerName, SandboxID: c.GetPodSandboxId(),
			Running:   c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING,
			CreatedAt: time.Unix(0, c.GetCreatedAt()),
		})
	}
	var sbs []Sandbox
	for _, s := range sresp.GetItems() {
		meta, err := criconfig.SandboxMetaFromLabels(s.GetLabels())
		if err != nil {
			continue
		}
		sbs = append(sbs, Sandbox{ID: s.GetId(), PodUID: meta.PodUID,
			Ready: s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.GetCreatedAt())})
	}
	return cs, sbs, nil
}

// RemoveContainer removes a dead container with its log files and its
// /var/log/containers link.
func (g *GC) RemoveContainer(ctx context.Context, c Container) error {
	return RemoveContainer(ctx, g.cfg.Runtime, g.cfg.CleanLogs, g.cfg.ContainerLogsDir, c)
}

// RemoveContainer removes a dead container through rs with its log files
// (through cleanLogs when not nil) and its link in containerLogsDir.
func RemoveContainer(ctx context.Context, rs Runtime, cleanLogs func(context.Context, string) error, containerLogsDir string, c Container) error {
	klog.V(2).InfoS("Removing dead container", "pod", klog.KRef(c.PodNamespace, c.PodName), "container", c.Name, "containerID", c.ID)
	var err error
	if cleanLogs != nil {
		err = cleanLogs(ctx, c.ID)
	} else {
		var resp *runtimeapi.ContainerStatusResponse
		if resp, err = rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ID}); err == nil {
			err = logrotate.RemoveLogFiles(resp.GetStatus().GetLogPath())
		}
	}
	if err != nil && !notFound(err) {
		klog.V(2).InfoS("Cannot remove the logs of a dead container", "containerID", c.ID, "err", err)
	}
	if _, err := rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ID}); err != nil && !notFound(err) {
		return fmt.Errorf("remove container %s of pod %s/%s: %w", c.ID, c.PodNamespace, c.PodName, err)
	}
	if containerLogsDir != "" && c.PodName != "" {
		os.Remove(filepath.Join(containerLogsDir, LegacyLogName(c.PodName, c.PodNamespace, c.Name, c.ID)))
	}
	return nil
}

// LegacyLogName is the /var/log/containers link of a container.
func LegacyLogName(podName, namespace, containerName, id string) string {
	return fmt.Sprintf("%s_%s_%s-%s.log", podName, namespace, containerName, id)
}

// removePodLogDirs removes the log directories (<ns>_<name>_<uid>) of pods
// whose content should be removed.
func (g *GC) removePodLogDirs() []error {
	if g.cfg.PodLogsDir == "" {
		return nil
	}
	entries, err := os.ReadDir(g.cfg.PodLogsDir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		parts := strings.Split(e.Name(), "_")
		if len(parts) != 3 || !e.IsDir() {
			continue
		}
		if g.cfg.Pods.ShouldPodContentBeRemoved(types.UID(parts[2])) {
			dir := filepath.Join(g.cfg.PodLogsDir, e.Name())
			klog.V(2).InfoS("Removing log directory of a deleted pod", "path", dir)
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("remove pod log directory: %w", err))
			}
		}
	}
	return errs
}

// removeDanglingLinks removes /var/log/containers links whose log is gone,
// unless their container still runs (its log may be between rename and
// reopen of a rotation).
func (g *GC) removeDanglingLinks(cs []Container) {
	if g.cfg.ContainerLogsDir == "" {
		return
	}
	running := map[string]bool{}
	for _, c := range cs {
		if c.Running {
			running[c.ID] = true
		}
	}
	links, _ := filepath.Glob(filepath.Join(g.cfg.ContainerLogsDir, "*.log"))
	for _, l := range links {
		if _, err := os.Stat(l); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		base := strings.TrimSuffix(filepath.Base(l), ".log")
		if i := strings.LastIndex(base, "-"); i >= 0 && running[base[i+1:]] {
			continue
		}
		klog.V(4).InfoS("Removing dangling container log link", "path", l)
		os.Remove(l)
	}
}

func notFound(err error) bool {
	return status.Code(err) == codes.NotFound
}
