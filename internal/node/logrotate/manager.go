package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Runtime is the part of the CRI runtime service the manager uses; the
// generated gRPC client satisfies it.
type Runtime interface {
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, in *runtimeapi.ReopenContainerLogRequest, opts ...grpc.CallOption) (*runtimeapi.ReopenContainerLogResponse, error)
}

var _ Runtime = (runtimeapi.RuntimeServiceClient)(nil)

// Config is what a Manager needs.
type Config struct {
	Runtime Runtime          // required
	Clock   clock.WithTicker // required
	Policy  Policy
	// Workers rotate that many containers at once (containerLogMaxWorkers); at least 1.
	Workers int
	// Interval between checks (containerLogMonitorInterval); at least 1s.
	Interval time.Duration
}

// Manager rotates container logs.
type Manager struct {
	cfg   Config
	locks keyedMutex
}

// New returns a Manager, or an error when the policy is invalid.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil || cfg.Clock == nil {
		return nil, errors.New("logrotate: Runtime and Clock are required")
	}
	if cfg.Policy.MaxFiles < 2 {
		return nil, fmt.Errorf("invalid MaxFiles %d, must be > 1", cfg.Policy.MaxFiles)
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if cfg.Interval < time.Second {
		cfg.Interval = 10 * time.Second
	}
	return &Manager{cfg: cfg, locks: keyedMutex{held: map[string]*sync.Mutex{}}}, nil
}

// Run checks the running containers' logs every interval until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.Policy.MaxSize < 0 {
		klog.InfoS("Container log rotation is disabled (containerLogMaxSize is negative)")
		return
	}
	klog.V(2).InfoS("Starting container log rotation", "maxSize", m.cfg.Policy.MaxSize, "maxFiles", m.cfg.Policy.MaxFiles,
		"workers", m.cfg.Workers, "interval", m.cfg.Interval)
	t := m.cfg.Clock.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := m.RotateAll(ctx); err != nil {
			klog.ErrorS(err, "Container log rotation failed")
		}
	}
}

// RotateAll rotates, with the configured number of workers, the log of
// every running container that reached the size limit.
func (m *Manager) RotateAll(ctx context.Context) error {
	resp, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < m.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if err := m.RotateIfDue(ctx, id); err != nil {
					klog.ErrorS(err, "Failed to rotate log for container", "containerID", id)
				}
			}
		}()
	}
	for _, c := range resp.GetContainers() {
		// Only running containers write; a stopped one keeps its last log.
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids <- c.GetId()
		}
	}
	close(ids)
	wg.Wait()
	return nil
}

// RotateIfDue rotates the container's current log when it reached MaxSize.
func (m *Manager) RotateIfDue(ctx context.Context, id string) error {
	unlock := m.locks.lock(id)
	defer unlock()
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return fmt.Errorf("container status: %w", err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return nil
	}
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		// A reopen failed after a rename (or the kubelet stopped between
		// the two): ask the runtime to create the file again.
		if err := m.reopen(ctx, id); err != nil {
			return fmt.Errorf("container log %s is missing and reopening it failed: %w", path, err)
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		return fmt.Errorf("stat container log: %w", err)
	}
	if !NeedsRotation(info.Size(), m.cfg.Policy) {
		return nil
	}
	return m.rotate(ctx, id, path)
}

func (m *Manager) rotate(ctx context.Context, id, path string) error {
	rotated, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return fmt.Errorf("list rotated logs of %s: %w", path, err)
	}
	plan := PlanRotation(rotated, m.cfg.Policy.MaxFiles)
	for _, f := range plan.Remove {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove old log: %w", err)
		}
	}
	for _, f := range plan.Compress {
		if err := compress(f); err != nil {
			return fmt.Errorf("compress log %s: %w", f, err)
		}
	}
	target := path + "." + m.cfg.Clock.Now().Format(TimestampFormat)
	if err := os.Rename(path, target); err != nil {
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	if err := m.reopen(ctx, id); err != nil {
		// Put it back so the next round tries again and nothing is lost.
		if rerr := os.Rename(target, path); rerr != nil {
			klog.ErrorS(rerr, "Failed to rename rotated log back", "rotatedLog", target, "log", path, "containerID", id)
		}
		return fmt.Errorf("reopen container log: %w", err)
	}
	klog.V(3).InfoS("Rotated container log", "containerID", id, "path", path, "rotated", target)
	return nil
}

func (m *Manager) reopen(ctx context.Context, id string) error {
	_, err := m.cfg.Runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

// Clean removes a container's current and rotated logs; the container
// garbage collector calls it before removing the container.
func (m *Manager) Clean(ctx context.Context, id string) error {
	unlock := m.locks.lock(id)
	defer unlock()
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return fmt.Errorf("container status: %w", err)
	}
	return RemoveLogFiles(resp.GetStatus().GetLogPath())
}

// RemoveLogFiles removes a log and every file rotated from it.
func RemoveLogFiles(path string) error {
	if path == "" {
		return nil
	}
	files, err := filepath.Glob(globEscape(path) + "*")
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove container log: %w", err)
		}
	}
	return nil
}

// compress gzips f to f.gz (through a temporary file) and removes f.
func compress(f string) error {
	in, err := os.Open(f)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := f + compressSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode())
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone after the rename; cleans up a failure
	w := gzip.NewWriter(out)
	if _, err := io.Copy(w, in); err != nil {
		out.Close()
		return err
	}
	if err := w.Close(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, f+compressSuffix); err != nil {
		return err
	}
	return os.Remove(f)
}

// globEscape quotes the glob metacharacters of a literal path.
func globEscape(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, p[i])
	}
	return string(out)
}

// keyedMutex serializes work on one key.
type keyedMutex struct {
	mu   sync.Mutex
	held map[string]*sync.Mutex
	refs map[string]int
}

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.refs == nil {
		k.refs = map[string]int{}
	}
	l, ok := k.held[key]
	if !ok {
		l = &sync.Mutex{}
		k.held[key] = l
	}
	k.refs[key]++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		k.refs[key]--
		if k.refs[key] == 0 {
			delete(k.refs, key)
			delete(k.held, key)
		}
		k.mu.Unlock()
	}
}
