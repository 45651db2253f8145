package app

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/app/options"
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
	if static.DeclaredFeatures, err = declaredFeatures(ctx, b.cfg, b.cri.Runtime); err != nil {
		return nil, err
	}
	return &nodeParts{
		machine: machine, static: static, containers: containers,
		latest: nodestatus.NewLatest(nodestatus.LocalNode(static, b.clock.Now())),
	}, nil
}

// declaredFeatures decides node.status.declaredFeatures once at start-up,
// as upstream's NewMainKubelet: from the feature gates, the runtime's
// features (one CRI Status call) and the kubelet's version. The features
// upstream would declare that this kubelet does not honour are logged by
// name.
func declaredFeatures(ctx context.Context, cfg *kubeletconfig.KubeletConfiguration, rt nodestatus.RuntimeStatus) ([]string, error) {
	gates, err := options.FeatureGates(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to set feature gates from initial flags-based config: %w", err)
	}
	v, err := kubeletVersion()
	if err != nil {
		return nil, err
	}
	in := nodestatus.DeclareInput{Gates: gateAdapter{gates}, KubeletVersion: v}
	if gates.Enabled(options.NodeDeclaredFeatures) {
		resp, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			klog.V(4).InfoS("Unable to prefetch container runtime features for node declared features", "err", err)
		}
		in.Runtime = nodestatus.DeclaredRuntimeFeatures(resp, err)
	}
	d := nodestatus.Declare(in)
	for _, w := range d.Withheld {
		klog.V(2).InfoS("Not declaring a node feature this kubelet does not honour", "feature", w.Name, "reason", w.Reason)
	}
	if d.Declared != nil {
		klog.V(2).InfoS("Node declared features", "features", d.Declared)
	}
	return d.Declared, nil
}

// gateAdapter reads component-base feature gates by name, for the shared
// node declared features library.
type gateAdapter struct{ featuregate.FeatureGate }

func (a gateAdapter) Enabled(name string) bool {
	return a.FeatureGate.Enabled(featuregate.Feature(name))
}

// kubeletVersion is the kubelet's version, for the node declared features
// (upstream parses version.Get()).
func kubeletVersion() (*version.Version, error) {
	v, err := version.Parse(options.Version)
	if err != nil {
		return nil, fmt.Errorf("failed to parse version: %w", err)
	}
	return v, nil
}
