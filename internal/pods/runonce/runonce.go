package runonce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/pods/podsync"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// Upstream's run-once limits: how long to wait for the sources, and how
// often to retry a pod that is not running yet.
const (
	ManifestDelay = 5 * time.Second
	MaxRetries    = 10
	RetryDelay    = time.Second
	maxRetryDelay = 10 * time.Second
)

// ErrFailed is returned when a pod did not run or finish cleanly.
var ErrFailed = errors.New("runonce: some pods failed")

// Syncer syncs one pod (podsync.Syncer).
type Syncer interface {
	SyncPod(ctx context.Context, pod *v1.Pod) (podworkers.Outcome, error)
}

// Runtime reads the runtime's view of a pod (kuberuntime.Manager).
type Runtime interface {
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kuberuntime.PodStatus, error)
}

// Statuses reads the statuses the syncs published (statusmanager.Manager).
type Statuses interface {
	Get(uid types.UID) (v1.PodStatus, bool)
}

var (
	_ Syncer   = (*podsync.Syncer)(nil)
	_ Runtime  = (*kuberuntime.Manager)(nil)
	_ Statuses = (*statusmanager.Manager)(nil)
)

// Config configures Run.
type Config struct {
	Updates      <-chan sources.PodUpdate // required: the pod sources' mux
	SourcesReady func() bool              // required
	Syncer       Syncer                   // required
	Runtime      Runtime                  // required
	Statuses     Statuses                 // required
	Clock        clock.Clock              // required
	Out          io.Writer                // required: one line per pod
}

// Run starts the pods the sources hold, waits until each runs or
// finishes, prints their outcomes and returns ErrFailed if any failed.
func Run(ctx context.Context, c Config) error {
	list, err := collect(ctx, c)
	if err != nil {
		return err
	}
	klog.InfoS("Runonce: starting pods", "count", len(list))
	results := make([]string, len(list))
	failed := make([]bool, len(list))
	var wg sync.WaitGroup
	for i, p := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			phase, err := runPod(ctx, c, p)
			if err != nil {
				results[i] = fmt.Sprintf("pod %q: failed: %v", p.Name, err)
				failed[i] = true
				return
			}
			results[i] = fmt.Sprintf("pod %q: %s", p.Name, phase)
		}()
	}
	wg.Wait()
	bad := 0
	for i, r := range results {
		fmt.Fprintln(c.Out, r)
		if failed[i] {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w: %d of %d", ErrFailed, bad, len(list))
	}
	return nil
}

// collect reads updates until every source has been seen or ManifestDelay
// passed, and returns the pods, sorted by name.
func collect(ctx context.Context, c Config) ([]*v1.Pod, error) {
	pods := map[types.UID]*v1.Pod{}
	deadline := c.Clock.After(ManifestDelay)
loop:
	for {
		select {
		case u := <-c.Updates:
			for _, p := range u.Pods {
				switch u.Op {
				case sources.ADD, sources.UPDATE:
					pods[p.UID] = p
				case sources.REMOVE:
					delete(pods, p.UID)
				}
			}
			if c.SourcesReady() {
				break loop
			}
		case <-deadline:
			klog.InfoS("Runonce: timed out waiting for every pod source; going on with what was read")
			break loop
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	list := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// runPod syncs a pod until all its containers run or it finished, backing
// off from RetryDelay up to MaxRetries tries.
func runPod(ctx context.Context, c Config, p *v1.Pod) (v1.PodPhase, error) {
	delays := backoff.Doubling(RetryDelay, maxRetryDelay)
	var lastErr error
	for attempt := 0; attempt < MaxRetries; attempt++ {
		_, err := c.Syncer.SyncPod(ctx, p)
		st, serr := c.Runtime.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
		if serr == nil && err == nil {
			if phase, done := Done(p, st); done {
				if phase == v1.PodFailed {
					return phase, errors.New("a container exited with an error")
				}
				return phase, nil
			}
		}
		lastErr = err
		if status, ok := c.Statuses.Get(p.UID); ok {
			if reason, msg, final := FinalFailure(status); final {
				return "", fmt.Errorf("%s: %s", reason, msg)
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-c.Clock.After(delays.Step()):
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("containers not running after %d attempts", MaxRetries)
	}
	return "", lastErr
}

// Done reports whether every app container runs or has exited, and the
// pod's phase then: Failed when one exited with an error and the pod never
// restarts, Running while any runs, else Succeeded. Pure.
func Done(p *v1.Pod, st *kuberuntime.PodStatus) (v1.PodPhase, bool) {
	running, exitedBad := 0, 0
	for i := range p.Spec.Containers {
		cs := st.FindContainer(p.Spec.Containers[i].Name)
		switch {
		case cs == nil:
			return "", false
		case cs.State == kuberuntime.StateRunning:
			running++
		case cs.State == kuberuntime.StateExited && cs.ExitCode == 0:
		case cs.State == kuberuntime.StateExited:
			exitedBad++
		default:
			return "", false
		}
	}
	switch {
	case exitedBad > 0 && p.Spec.RestartPolicy == v1.RestartPolicyNever:
		return v1.PodFailed, true
	case exitedBad > 0:
		return "", false
	case running > 0:
		return v1.PodRunning, true
	}
	return v1.PodSucceeded, true
}

// FinalFailure finds a waiting reason in the published status that
// retrying cannot cure. Pure.
func FinalFailure(st v1.PodStatus) (reason, message string, final bool) {
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case kuberuntime.ReasonCreateConfigError, kuberuntime.ErrImageNeverPull.Error(), kuberuntime.ErrInvalidImage.Error():
				return w.Reason, w.Message, true
			}
		}
	}
	return "", "", false
}
