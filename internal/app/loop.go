package app

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/api/server"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/localobjects"
	"github.com/seed-kubelet/kubelet/internal/node/containergc"
	"github.com/seed-kubelet/kubelet/internal/node/eviction"
	"github.com/seed-kubelet/kubelet/internal/node/nodelease"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/shutdown"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/pods/admission"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/syncloop"
	"github.com/seed-kubelet/kubelet/internal/runtime/cri"
	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
)

// Periods of the sync loop's ticks and the status API sync, as upstream.
const (
	syncTick         = time.Second
	housekeepingTick = 2 * time.Second
	statusResync     = 10 * time.Second
	relistPeriod     = time.Second
	streamRelist     = 10 * time.Second
	relistThreshold  = 3 * time.Minute
	workerBackOff    = 10 * time.Second
)

// loopParts are what runs beside the pods' syncs: the pod workers and the
// loop feeding them, PLEG, garbage collection, eviction, the node's status
// and lease, and the HTTP endpoints.
type loopParts struct {
	b           *base
	pods        *podParts
	workers     *podworkers.PodWorkers
	containerGC *containergc.GC
	pleg        *pleg.PLEG
	health      *cri.Health
	stats       *stats.Provider
	eviction    *eviction.Manager
	// shutdown is nil unless graceful node shutdown is configured.
	shutdown   *shutdown.Manager
	dispatcher *syncloop.Dispatcher
	allocation *allocation.Manager
	// handler is what the sync loop calls: the dispatcher, telling the
	// local API of pod changes in standalone mode.
	handler syncloop.Handler
	servers serverConfig
	// cluster is nil in standalone mode.
	cluster *clusterParts
}

// clusterParts are what a node of a cluster runs beside the sync loop.
type clusterParts struct {
	targets *statusmanager.Targets
	node    *nodestatus.Controller
	lease   *nodelease.Controller
}

// newLoopParts builds the pod workers and everything that watches the pods
// and the node, and the dispatcher that hands the loop's inputs to them.
func newLoopParts(ctx context.Context, b *base, node *nodeParts, p *podParts) (*loopParts, error) {
	cfg, clk := b.cfg, b.clock
	// A terminated pod frees resources a deferred resize may be waiting
	// for (upstream retries the pending resizes then).
	terminated := make(chan struct{}, 1)
	workers := podworkers.New(ctx, podworkers.Config{
		Syncer: p.syncer, Clock: clk, ResyncInterval: cfg.SyncFrequency.Duration, BackOffPeriod: workerBackOff,
		OnTerminated: func(pod *v1.Pod) {
			p.statuses.Kick(pod.UID)
			p.changed.poke()
			select {
			case terminated <- struct{}{}:
			default:
			}
		},
		Metrics: b.metrics,
	})
	if p.objects != nil {
		// A pod waiting for a local object (FailedMount,
		// CreateContainerConfigError) starts the moment it appears, and an
		// edit reaches the mounted files at once.
		p.objects.Subscribe(func(changed []localobjects.Key) {
			workers.SyncIf(func(pod *v1.Pod) bool { return localobjects.References(pod, changed) })
		})
	}
	containerGC := containergc.New(containergc.Config{
		Runtime: b.cri.Runtime, Clock: clk, Policy: containerGCPolicy(b.flags), SourcesReady: p.sourcesReady,
		Pods:       containergc.PodStateOf(containergc.PodStateConfig{Pods: p.pods, Workers: workers, Statuses: p.statuses}),
		PodLogsDir: cfg.PodLogsDir, ContainerLogsDir: containerLogsDir, CleanLogs: p.logRotation.Clean,
		Recorder: b.recorder, NodeRef: nodestatus.NodeRef(b.host.nodeName),
	})
	plegLoop := pleg.New(pleg.Config{
		Lister: p.runtime, Clock: clk, Events: b.cri.Runtime, Metrics: b.metrics,
		RelistPeriod: relistPeriod, StreamRelistPeriod: streamRelist, RelistThreshold: relistThreshold,
	})
	statsProvider := stats.New(stats.Config{
		Runtime: b.cri.Runtime, Images: b.cri.Image, Pods: p.pods, NodeName: b.host.nodeName,
		RootDir: b.flags.RootDirectory, PodLogsDir: cfg.PodLogsDir, Clock: clk,
		VolumeStatsAggPeriod: cfg.VolumeStatsAggPeriod.Duration, Cgroups: b.host.cgroups,
		NodeAllocatableCgroup: node.containers.NodeAllocatableCgroup(), Machine: cadvisorMachine(b.host.machine),
		PluginVolumes: pluginVolumeStats(p.volumes, p.storage.csi), RecentPods: plegLoop.Recent,
	})
	killer := eviction.NewKiller(eviction.KillerConfig{Workers: workers, Statuses: p.statuses, Clock: b.clock})
	activePods := func() []*v1.Pod { return podworkers.Active(p.pods.List(), workers.States()) }
	evictionMgr, err := newEvictionManager(b, p, killer, activePods, statsProvider, containerGC)
	if err != nil {
		return nil, err
	}
	shutdownMgr, shutdownChanged := newShutdownManager(b, killer, activePods)
	ac := admission.AdmitterConfig{
		Node: node.latest, Pressure: evictionMgr,
		KernelRelease: node.machine.KernelVersion, AllowedUnsafeSysctls: cfg.AllowedUnsafeSysctls, Recorder: b.recorder,
	}
	if shutdownMgr != nil {
		ac.Shutdown = shutdownMgr
	}
	if node.static.DeclaredFeatures != nil {
		v, err := kubeletVersion()
		if err != nil {
			return nil, err
		}
		if ac.Features, err = admission.NewDeclaredFeatures(node.static.DeclaredFeatures, v); err != nil {
			return nil, err
		}
	}
	admitter, err := admission.NewAdmitter(ac)
	if err != nil {
		return nil, err
	}
	health := cri.NewHealth(cri.HealthConfig{Runtime: b.cri.Runtime, Clock: clk})
	allocations := allocation.New(allocation.Config{
		Records: p.allocations, Clock: clk, Recorder: b.recorder, Admit: admitter.Admit,
		Active: func() []*v1.Pod { return podworkers.Active(p.pods.List(), workers.States()) },
		Pod:    p.pods.Get, Sync: func(uid types.UID) { workers.Sync(uid) },
		SourcesReady: p.sourcesReady, LimitedSwap: p.spec.LimitedSwap, Metrics: b.metrics,
	})
	go retryResizesOnTermination(ctx, allocations, terminated)
	dc := syncloop.DispatcherConfig{
		Pods: p.pods, Workers: workers, Runtime: p.runtime, SourcesReady: p.sourcesReady, Admit: admitter.Admit,
		UpdateQOS: node.containers.UpdateQOS, CleanupPodCgroups: node.containers.Housekeeping, Allocations: allocations,
		CleanupPodVolumes: p.volumes.CleanupOrphans, Metrics: b.metrics, ForgetEvents: b.recorder.Forget,
	}
	var cluster *clusterParts
	if b.api != nil {
		sc := nodestatus.SourceConfig{
			Static: node.static, Runtime: b.cri.Runtime, Images: b.cri.Image, PLEG: plegLoop, Pressure: evictionMgr, Storage: p.storage,
		}
		if shutdownMgr != nil {
			sc.Shutdown = shutdownMgr
		}
		// The node status goes out at once when a pressure condition
		// changes, the runtime comes back (or goes), a volume that needs
		// attaching comes into use, the node starts shutting down, or the
		// client certificate changes.
		wake := nodeStatusWake(ctx, b.identity, evictionMgr.ConditionsChanged(), health.Changed(), p.storage.inUseChanged, shutdownChanged)
		cluster = newClusterParts(b, node, p, workers, nodestatus.NewSource(sc), wake)
		dc.Mirrors, dc.StatusChanged, dc.Reject = p.mirrors, p.statuses.Kick, cluster.targets.Reject
	}
	dispatcher := syncloop.NewDispatcher(dc)
	var handler syncloop.Handler = dispatcher
	var local *localAPIConfig
	if cluster == nil {
		handler = notifying{Dispatcher: dispatcher, changed: p.changed}
		local = &localAPIConfig{
			workers: workers, objects: p.objects, podsChanged: p.changed, static: node.static,
			nodeSource: nodestatus.NewSource(nodestatus.SourceConfig{
				Static: node.static, Runtime: b.cri.Runtime, Images: b.cri.Image, PLEG: plegLoop, Pressure: evictionMgr,
			}),
		}
	}
	return &loopParts{
		b: b, pods: p, workers: workers, containerGC: containerGC, pleg: plegLoop, health: health,
		stats: statsProvider, eviction: evictionMgr, shutdown: shutdownMgr, dispatcher: dispatcher, handler: handler, cluster: cluster, allocation: allocations,
		servers: serverConfig{
			pods: p.pods, statuses: p.statuses, runtime: p.runtime, stats: statsProvider, node: node.latest, local: local,
			collectors: p.credentialPlugins.Collectors(),
			checks: []server.HealthCheck{
				{Name: "ping", Check: func() error { return nil }},
				{Name: "pleg", Check: plegLoop.HealthCheck},
				{Name: "runtime", Check: health.HealthCheck},
			},
		},
	}, nil
}

// retryResizesOnTermination retries the deferred resizes when a pod has
// terminated, until ctx ends.
func retryResizesOnTermination(ctx context.Context, m *allocation.Manager, terminated <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-terminated:
			if m.HasPending() {
				m.RetryPending(allocation.TriggerPodTerminated)
			}
		}
	}
}

// newEvictionManager builds the eviction manager: it reads the stats,
// reclaims through the GCs and evicts through the pod workers.
func newEvictionManager(b *base, p *podParts, killer *eviction.Killer, activePods func() []*v1.Pod, summary *stats.Provider, containerGC *containergc.GC) (*eviction.Manager, error) {
	ec, err := evictionSettings(b.cfg, b.host)
	if err != nil {
		return nil, err
	}
	ec.Summary, ec.ImageGC, ec.ContainerGC = summary, p.imageGC, containerGC
	ec.Killer, ec.ActivePods = killer, activePods
	ec.DedicatedImageFs = eviction.DedicatedImageFs(b.flags.RootDirectory, b.cri.Image)
	ec.Recorder, ec.NodeRef, ec.Clock, ec.Metrics = b.recorder, nodestatus.NodeRef(b.host.nodeName), b.clock, b.metrics
	return eviction.New(ec)
}

// newShutdownManager builds the graceful node shutdown manager when
// shutdownGracePeriod or shutdownGracePeriodByPodPriority asks for one
// (nil otherwise); the channel ticks when the node starts or stops
// shutting down.
func newShutdownManager(b *base, killer *eviction.Killer, activePods func() []*v1.Pod) (*shutdown.Manager, <-chan struct{}) {
	periods := shutdown.Periods(b.cfg)
	if len(periods) == 0 {
		return nil, nil
	}
	changed := make(chan struct{}, 1)
	return shutdown.New(shutdown.Config{
		Periods: periods, Connect: func() (shutdown.Logind, error) { return shutdown.ConnectLogind("") },
		Clock: b.clock, ActivePods: activePods, Killer: killer, Recorder: b.recorder, NodeRef: nodestatus.NodeRef(b.host.nodeName),
		Changed: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		StateDir: b.flags.RootDirectory, StartTime: b.metrics.GracefulShutdownStartTime, EndTime: b.metrics.GracefulShutdownEndTime,
	}), changed
}

// newClusterParts builds the status writer, the node status controller
// and the lease.
func newClusterParts(b *base, node *nodeParts, p *podParts, workers *podworkers.PodWorkers,
	source *nodestatus.Source, wake <-chan struct{}) *clusterParts {
	cfg := b.cfg
	return &clusterParts{
		targets: p.targets,
		node: nodestatus.New(nodestatus.Config{
			Client: b.api.heartbeat, NodeName: b.host.nodeName, Clock: b.clock, Inputs: source.Inputs,
			UpdateFrequency: cfg.NodeStatusUpdateFrequency.Duration, ReportFrequency: cfg.NodeStatusReportFrequency.Duration,
			RegisterNode: derefBool(cfg.RegisterNode, true), Recorder: b.recorder, Latest: node.latest, Wake: wake,
			// Static pods waited for the Node's UID to write mirror pods.
			OnRegistered: func(*v1.Node) { workers.SyncIf(podutil.IsStaticPod) },
		}),
		lease: nodelease.New(nodelease.Config{
			Client: b.api.heartbeat, NodeName: b.host.nodeName, Clock: b.clock,
			LeaseDurationSeconds: cfg.NodeLeaseDurationSeconds, NodeUID: node.latest.UID,
		}),
	}
}

// start starts everything beside the loop, then the HTTP endpoints.
func (l *loopParts) start(ctx context.Context) error {
	b, p := l.b, l.pods
	go l.containerGC.Run(ctx)
	go p.imageGC.Run(ctx)
	go p.logRotation.Run(ctx)
	go l.pleg.Run(ctx)
	go l.health.Run(ctx)
	if err := startServers(ctx, b, l.servers); err != nil {
		return err
	}
	if c := l.cluster; c != nil {
		go p.statuses.RunAPISync(ctx, statusmanager.APISyncConfig{
			Client: b.api.main, Clock: b.clock, ResyncPeriod: statusResync,
			Target: c.targets.Target, Observed: c.targets.Observed, WatchOpenSince: p.podWatch.OpenSince,
			Terminated: l.workers.IsTerminated,
			Rebuild:    func(uid types.UID) { l.workers.Sync(uid) },
		})
		go c.node.Run(ctx)
		b.recorder.Eventf(nodestatus.NodeRef(b.host.nodeName), v1.EventTypeNormal, events.StartingKubelet, "Starting kubelet.")
		go c.lease.Run(ctx)
	}
	go l.eviction.Run(ctx)
	if l.shutdown != nil {
		go l.shutdown.Run(ctx)
	}
	go l.allocation.Run(ctx)
	return nil
}

// run runs the sync loop until ctx ends.
func (l *loopParts) run(ctx context.Context) {
	syncTicker := l.b.clock.NewTicker(syncTick)
	defer syncTicker.Stop()
	hkTicker := l.b.clock.NewTicker(housekeepingTick)
	defer hkTicker.Stop()
	klog.InfoS("Kubelet started", "nodeName", l.b.host.nodeName, "nodeIPs", l.b.host.ips, "sources", sets.List(l.pods.sourceNames))
	syncloop.Run(ctx, syncloop.Channels{
		Config: l.pods.sources.Updates(), PLEG: l.pleg.Events(), Probes: l.pods.probes.Updates(),
		Sync: syncTicker.C(), Housekeeping: hkTicker.C(),
	}, l.handler)
}
