package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/runonce"
)

// ErrLockContention is returned when another process opened the lock file.
var ErrLockContention = errors.New("another process opened the kubelet lock file")

// Run starts the kubelet and blocks until ctx ends or it fails. It builds
// the kubelet in dependency order, one stage after the other (each stage
// only reads what the earlier ones built), then starts it and runs the
// sync loop.
func Run(ctx context.Context, o *options.Options) error {
	if err := checkCloudProvider(o.Flags.CloudProvider); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unlock, err := lockFile(o.Flags, func() { cancel(ErrLockContention) })
	if err != nil {
		return err
	}
	defer unlock()
	host, err := prepareHost(o.Config, o.Flags)
	if err != nil {
		return err
	}

	b, err := connect(ctx, o, host)
	if err != nil {
		return err
	}
	defer b.cri.Close()
	node, err := newNodeParts(ctx, b)
	if err != nil {
		return err
	}
	pods, err := newPodParts(ctx, b, node)
	if err != nil {
		return err
	}
	if o.Config.RunOnce {
		return runonce.Run(ctx, runonce.Config{
			Updates: pods.sources.Updates(), SourcesReady: pods.sourcesReady, Syncer: pods.syncer,
			Runtime: pods.runtime, Statuses: pods.statuses, Clock: b.clock, Out: os.Stdout,
		})
	}
	loop, err := newLoopParts(ctx, b, node, pods)
	if err != nil {
		return err
	}
	if err := loop.start(ctx); err != nil {
		return err
	}
	loop.run(ctx)
	return exitError(ctx, o.Flags.LockFilePath)
}

// exitError is what Run returns once the loop ended.
func exitError(ctx context.Context, lockFilePath string) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrLockContention) {
		// Another kubelet is taking over (an upgrade): leave cleanly, as upstream.
		klog.InfoS("Lock file contention detected, exiting", "path", lockFilePath)
		return nil
	}
	if cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// checkCloudProvider refuses the in-tree cloud providers upstream removed,
// with upstream's error; "external" hands the Node's addresses and
// initialisation to a cloud controller manager.
func checkCloudProvider(name string) error {
	if err := nodestatus.CheckCloudProvider(name); err != nil {
		return fmt.Errorf("failed to create kubelet: %w", err)
	}
	if name == nodestatus.CloudProviderExternal {
		klog.InfoS("External cloud provider specified")
	}
	return nil
}
