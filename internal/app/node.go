package app

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/events"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// nodeParts are what the node offers pods: its description, the Node as
// last known, and its cgroups.
type nodeParts struct {
	machine hostinfo.Machine
	// static are the node status inputs that never change.
	static nodestatus.Inputs
	// latest starts as the Node computed here and follows the API's.
	latest     *nodestatus.Latest
	containers *cgroups.Manager
}

// newNodeParts reads the machine, computes the local Node, sets up the
// cgroup tree and starts the OOM watcher.
func newNodeParts(ctx context.Context, b *base) (*nodeParts, error) {
	machine := b.host.machine
	res, err := parseReserved(b.cfg)
	if err != nil {
		return nil, err
	}
	cc := cgroupSettings(b.cfg, machine, res)
	cc.Layout, cc.LayoutErr = b.host.cgroups, b.host.cgroupsErr
	cc.Runtime, cc.NodeName, cc.Recorder, cc.Clock = b.cri.Runtime, b.host.nodeName, b.recorder, b.clock
	containers, err := cgroups.Setup(ctx, cc)
	if err != nil {
		return nil, err
	}
	oom := &cgroups.OOMWatcher{NodeName: b.host.nodeName, Recorder: b.recorder}
	if err := oom.Start(ctx); err != nil {
		return nil, fmt.Errorf("failed to start OOM watcher: %w", err)
	}
	if b.host.swapOn && !volume.TmpfsNoswapSupported(machine.KernelVersion) {
		// As upstream's container manager, on a node running with swap.
		b.recorder.Eventf(nodestatus.NodeRef(b.host.nodeName), v1.EventTypeWarning, events.PossibleMemoryBackedVolumesOnDisk,
			"The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) "+
				"might be swapped to disk and should no longer be considered secure.")
	}
	static := nodeStaticInputs(b.cfg, b.flags, b.host, machine, res, b.version.RuntimeName+"://"+b.version.RuntimeVersion)
	return &nodeParts{
		machine: machine, static: static, containers: containers,
		latest: nodestatus.NewLatest(nodestatus.LocalNode(static, b.clock.Now())),
	}, nil
}
