package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/pods/podsync"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// Upstream's run-once limits: how long to wait for the sources, and how
// often to retry a pod that is not running yet.
const (
	runOnceManifestDelay = 5 * time.Second
	runOnceMaxRetries    = 10
	runOnceRetryDelay    = time.Second
)

// ErrRunOnceFailed is returned when a pod did not run or finish cleanly.
var ErrRunOnceFailed = errors.New("runonce: some pods failed")

type runOnceConfig struct {
	Updates      <-chan sources.PodUpdate
	SourcesReady func() bool
	Syncer       *podsync.Syncer
	Runtime      *kuberuntime.Manager
	Status       *statusmanager.Manager
	Clock        clock.Clock
	Out          io.Writer
}

// runOnce starts the pods the sources hold, waits until each runs or
// finishes, prints their states and returns an error if any failed.
func runOnce(ctx context.Context, c runOnceConfig) error {
	pods := map[string]*v1.Pod{}
	deadline := c.Clock.After(runOnceManifestDelay)
collect:
	for {
		select {
		case u := <-c.Updates:
			for _, p := range u.Pods {
				switch u.Op {
				case sources.ADD, sources.UPDATE:
					pods[string(p.UID)] = p
				case sources.REMOVE:
					delete(pods, string(p.UID))
				}
			}
			if c.SourcesReady() {
				break collect
			}
		case <-deadline:
			klog.InfoS("Runonce: timed out waiting for every pod source; going on with what was read")
			break collect
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var list []*v1.Pod
	for _, p := range pods {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	klog.InfoS("Runonce: starting pods", "count", len(list))

	results := make([]string, len(list))
	failed := make([]bool, len(list))
	var wg sync.WaitGroup
	for i, p := range list {
		wg.Add(1)
		go func(i int, p *v1.Pod) {
			defer wg.Done()
			phase, err := c.runPod(ctx, p)
			if err != nil {
				results[i] = fmt.Sprintf("pod %q: failed: %v", p.Name, err)
				failed[i] = true
				return
			}
			results[i] = fmt.Sprintf("pod %q: %s", p.Name, phase)
		}(i, p)
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
		return fmt.Errorf("%w: %d of %d", ErrRunOnceFailed, bad, len(list))
	}
	return nil
}

// runPod syncs a pod until all its containers run or it finished.
func (c runOnceConfig) runPod(ctx context.Context, p *v1.Pod) (v1.PodPhase, error) {
	delays := backoff.Doubling(runOnceRetryDelay, 10*time.Second)
	var lastErr error
	for attempt := 0; attempt < runOnceMaxRetries; attempt++ {
		_, err := c.Syncer.SyncPod(ctx, p)
		st, serr := c.Runtime.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
		if serr == nil && err == nil {
			if phase, done := runOnceDone(p, st); done {
				if phase == v1.PodFailed {
					return phase, fmt.Errorf("a container exited with an error")
				}
				return phase, nil
			}
		}
		lastErr = err
		if reason, msg, final := finalFailure(c.Status, p); final {
			return "", fmt.Errorf("%s: %s", reason, msg)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-c.Clock.After(delays.Step()):
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("containers not running after %d attempts", runOnceMaxRetries)
	}
	return "", lastErr
}

// runOnceDone reports whether every app container runs or has exited.
func runOnceDone(p *v1.Pod, st *kuberuntime.PodStatus) (v1.PodPhase, bool) {
	running, exitedOK, exitedBad := 0, 0, 0
	for i := range p.Spec.Containers {
		cs := st.FindContainer(p.Spec.Containers[i].Name)
		switch {
		case cs == nil:
			return "", false
		case cs.State == kuberuntime.StateRunning:
			running++
		case cs.State == kuberuntime.StateExited && cs.ExitCode == 0:
			exitedOK++
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

// finalFailure reports a waiting reason that retrying cannot cure.
func finalFailure(sm *statusmanager.Manager, p *v1.Pod) (string, string, bool) {
	st, ok := sm.Get(p.UID)
	if !ok {
		return "", "", false
	}
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case kuberuntime.ReasonCreateConfigError, "ErrImageNeverPull", "InvalidImageName":
				return w.Reason, w.Message, true
			}
		}
	}
	return "", "", false
}
