package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/api/auth"
	"github.com/seed-kubelet/kubelet/internal/api/logs"
	"github.com/seed-kubelet/kubelet/internal/api/server"
	"github.com/seed-kubelet/kubelet/internal/api/streaming"
	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/node/containergc"
	"github.com/seed-kubelet/kubelet/internal/node/eviction"
	"github.com/seed-kubelet/kubelet/internal/node/imagegc"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/pods/mirror"
	"github.com/seed-kubelet/kubelet/internal/pods/podinputs"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podsync"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/syncloop"
	"github.com/seed-kubelet/kubelet/internal/runtime/cri"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/sources"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// containerLogsDir holds the legacy /var/log/containers links log shippers read.
const containerLogsDir = "/var/log/containers"

// ErrLockContention is returned when another process opened the lock file.
var ErrLockContention = errors.New("another process opened the kubelet lock file")

// Run starts the kubelet and blocks until ctx ends or it fails.
func Run(ctx context.Context, o *options.Options) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cfg, flags := o.Config, o.Flags
	clk := clock.RealClock{}

	if flags.LockFilePath != "" {
		klog.InfoS("Acquiring file lock", "path", flags.LockFilePath)
		lock, err := acquireLock(flags.LockFilePath)
		if err != nil {
			return err
		}
		defer lock.Close()
		if flags.ExitOnLockContention {
			if err := watchLockContention(flags.LockFilePath, func() { cancel(ErrLockContention) }); err != nil {
				return err
			}
		}
	}
	host, err := prepareHost(cfg, flags)
	if err != nil {
		return err
	}
	nodeName, hostIPs, podsDir := host.nodeName, host.ips, host.podsDir

	client, err := cri.Dial(cri.Config{
		RuntimeEndpoint: cfg.ContainerRuntimeEndpoint, ImageEndpoint: cfg.ImageServiceEndpoint,
		Timeout: cfg.RuntimeRequestTimeout.Duration, Interceptors: []grpc.UnaryClientInterceptor{metrics.UnaryInterceptor},
	})
	if err != nil {
		return err
	}
	defer client.Close()
	version, err := waitForRuntime(ctx, client.Runtime, clk)
	if err != nil {
		return err
	}
	klog.InfoS("Container runtime initialized", "containerRuntime", version.RuntimeName, "version", version.RuntimeVersion, "apiVersion", version.RuntimeApiVersion)

	machineMemory := machineMemoryBytes()
	podMgr := podmanager.NewManager()
	statusMgr := statusmanager.NewManager(nil)
	var recorder events.Recorder = events.LogRecorder{}
	var cl *clients
	var inputs *podinputs.Source
	var mirrors *mirror.Manager
	if flags.KubeConfig != "" {
		if cl, err = newClients(flags.KubeConfig, cfg); err != nil {
			return err
		}
		recorder = eventRecorder(ctx, cl.events, nodeName)
		inputs = podinputs.New(podinputs.Config{Client: cl.main, Clock: clk, Recorder: recorder})
	}
	// The pod workers start later; the container manager asks them which
	// pods still hold resources.
	var workers *podworkers.PodWorkers
	containerMgr, cgroupFS, err := startContainerManager(ctx, cgroupDeps{
		cfg: cfg, flags: flags, nodeName: nodeName, runtime: client.Runtime, recorder: recorder, clock: clk,
		activePods: func() []*v1.Pod { return activePods(podMgr, workers) },
	})
	if err != nil {
		return err
	}
	if err := startOOMWatcher(ctx, nodeName, recorder); err != nil {
		return err
	}
	node := &nodeState{}
	if cl != nil {
		mirrors = mirror.NewManager(mirror.New(mirror.Config{Client: cl.main, NodeName: nodeName, NodeUID: node.uid}), podMgr)
	}

	puller := kuberuntime.NewImagePuller(kuberuntime.ImageConfig{
		Images: client.Image, Clock: clk, Recorder: recorder,
		SerializePulls: derefBool(cfg.SerializeImagePulls, true), MaxParallelPulls: int(derefInt32(cfg.MaxParallelImagePulls)),
		QPS: derefInt32AsFloat(cfg.RegistryPullQPS), Burst: int(cfg.RegistryBurst),
	})
	spec := criconfig.Options{
		NodeName: nodeName, PodLogsDir: cfg.PodLogsDir, ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain,
		ResolvConf: derefString(cfg.ResolverConfig), MachineMemoryBytes: machineMemory, MachineCPUMilli: int64(runtime.NumCPU()) * 1000,
		HostIPs: hostIPs, DisableCPUCFSQuota: !derefBool(cfg.CPUCFSQuota, true), CgroupV2: cgroupFS != nil && cgroupFS.Version == cgroups.V2,
	}
	if cfg.CPUCFSQuotaPeriod != nil {
		spec.CPUCFSQuotaPeriod = cfg.CPUCFSQuotaPeriod.Microseconds()
	}
	// A resourceFieldRef to a missing limit reads the node's allocatable.
	spec.NodeAllocatable = func() v1.ResourceList {
		if n := node.get(); n != nil {
			return n.Status.Allocatable
		}
		return nil
	}
	var creds kuberuntime.PullCredentials
	if inputs != nil {
		spec.EnvSource = inputs
		creds = inputs.Credentials
	}
	volCfg := volume.Config{PodsDir: podsDir, NodeName: nodeName, ResourceField: spec.ResourceFieldValue}
	sd := storageDeps{rootDir: flags.RootDirectory, podsDir: podsDir, nodeName: nodeName, clock: clk, node: node,
		puller: puller, creds: creds, runtimeName: version.RuntimeName, runtimeVersion: version.RuntimeVersion}
	if inputs != nil {
		tokens := podinputs.NewTokens(podinputs.TokensConfig{Request: podinputs.ClientTokenRequester(cl.main), Clock: clk})
		volCfg.Sources, volCfg.Tokens = inputs, tokens
		sd.client, sd.inputs, sd.tokens = cl.main, inputs, tokens
	}
	store, err := startStorage(ctx, sd)
	if err != nil {
		return err
	}
	volCfg.CSI, volCfg.Images = store.csi, store.images
	if store.claims != nil {
		volCfg.Claims = store.claims
	}
	volumes := volume.New(volCfg)
	logRotation, err := newLogRotation(cfg, client.Runtime, clk)
	if err != nil {
		return err
	}
	imageGC, err := newImageGC(cfg, client.Image, client.Runtime, clk, recorder, nodeName)
	if err != nil {
		return err
	}
	gcPolicy := containerGCPolicy(flags)
	runtimeMgr := kuberuntime.NewManager(kuberuntime.Config{
		Runtime: client.Runtime, Images: puller, Clock: clk, Recorder: recorder, Spec: spec, Credentials: creds,
		PodsDir: podsDir, ContainerLogsDir: containerLogsDir, HostIPs: hostIPs,
		DeadContainerMinAge: gcPolicy.MinAge, CleanLogs: logRotation.Clean,
		Mounts: volumes.Mounts, Devices: volumes.Devices, TearDownVolumes: volumes.TearDown, PodCgroups: containerMgr,
		RunHook: func(ctx context.Context, h *v1.LifecycleHandler, c *v1.Container, id, podIP string, timeout time.Duration) error {
			return prober.RunHook(ctx, h, c, id, podIP, client.Runtime, clk, timeout)
		},
	})
	// The prober wakes the pod's worker whenever a probe result changes.
	probes := prober.New(prober.Config{
		Runtime: client.Runtime, Clock: clk, Recorder: recorder,
		OnUpdate: func(u prober.Update) {
			if workers != nil {
				workers.Sync(u.PodUID)
			}
		},
	})
	syncCfg := podsync.Config{
		Runtime: runtimeMgr, Status: statusMgr, Clock: clk, HostIPs: hostIPs,
		RuntimeName: version.RuntimeName, MaxDeadPerContainer: gcPolicy.MaxPerPodContainer, Volumes: volumes, Probes: probes, Recorder: recorder,
	}
	if mirrors != nil {
		syncCfg.Mirrors = mirrors
	}
	syncer := podsync.New(syncCfg)

	var apiClient kubeclient.Interface
	if cl != nil {
		apiClient = cl.main
	}
	podCfg, sourceNames := startSources(ctx, cfg, nodeName, apiClient, clk)
	sourcesReady := func() bool { return podCfg.SeenAllSources(sourceNames) }

	if cfg.RunOnce {
		return runOnce(ctx, runOnceConfig{Updates: podCfg.Updates(), SourcesReady: sourcesReady, Syncer: syncer, Runtime: runtimeMgr, Status: statusMgr, Clock: clk, Out: os.Stdout})
	}

	evict := newEvictor(statusMgr)
	workers = podworkers.New(ctx, podworkers.Config{
		Syncer: syncer, Clock: clk, ResyncInterval: cfg.SyncFrequency.Duration, BackOffPeriod: 10 * time.Second,
		OnTerminated: func(p *v1.Pod) { statusMgr.Kick(p.UID); evict.terminated(p.UID) },
	})
	evict.workers = workers
	containerGC := containergc.New(containergc.Config{
		Runtime: client.Runtime, Pods: &podGCState{pods: podMgr, workers: workers, statuses: statusMgr}, Clock: clk,
		Policy: gcPolicy, SourcesReady: sourcesReady, PodLogsDir: cfg.PodLogsDir, ContainerLogsDir: containerLogsDir,
		CleanLogs: logRotation.Clean, Recorder: recorder, NodeRef: nodestatus.NodeRef(nodeName),
	})
	startGarbageCollection(ctx, containerGC, imageGC, logRotation)
	p := pleg.New(pleg.Config{
		Lister: runtimeMgr, Clock: clk, Events: client.Runtime,
		RelistPeriod: time.Second, StreamRelistPeriod: 10 * time.Second, RelistThreshold: 3 * time.Minute,
	})
	go p.Run(ctx)

	runtimeHealth := &runtimeHealth{}
	go runtimeHealth.run(ctx, client.Runtime, clk)
	checks := []server.HealthCheck{
		{Name: "ping", Check: func() error { return nil }},
		{Name: "pleg", Check: func() error { _, err := p.Healthy(); return err }},
		{Name: "runtime", Check: runtimeHealth.err},
	}
	statsProvider := stats.New(stats.Config{
		Runtime: client.Runtime, Images: client.Image, Pods: podMgr, NodeName: nodeName,
		RootDir: flags.RootDirectory, PodLogsDir: cfg.PodLogsDir, Clock: clk,
		VolumeStatsAggPeriod: cfg.VolumeStatsAggPeriod.Duration, PluginVolumes: pluginVolumeStats(volumes, store.csi),
	})
	evictionMgr, err := newEvictionManager(evictionDeps{
		cfg: cfg, rootDir: flags.RootDirectory, nodeName: nodeName, clock: clk, stats: statsProvider,
		images: client.Image, pods: podMgr, workers: workers, killer: evict, recorder: recorder,
		onChange: node.triggerStatus, imageGC: imageGC, containerGC: containerGC,
	})
	if err != nil {
		return err
	}
	if err := startServers(ctx, serverDeps{
		cfg: cfg, flags: flags, nodeName: nodeName, hostIPs: hostIPs, clock: clk, checks: checks,
		client: client, pods: podMgr, statuses: statusMgr, runtime: runtimeMgr, api: apiClient, stats: statsProvider,
	}); err != nil {
		return err
	}

	dcfg := syncloop.DispatcherConfig{
		Pods: podMgr, Workers: workers, Runtime: runtimeMgr, SourcesReady: sourcesReady,
		CleanupPodCgroups: containerMgr.Housekeeping, CleanupPodVolumes: volumes.CleanupOrphans, PodHasVolumes: volumes.PodHasVolumes,
	}
	ni, err := newNodeInputs(cfg, flags, nodeName, hostIPs, version.RuntimeName+"://"+version.RuntimeVersion,
		client.Runtime, client.Image, func() error { _, err := p.Healthy(); return err })
	if err != nil {
		return err
	}
	ni.pressure = evictionMgr.Conditions
	ni.storage = store
	node.set(ni.localNode(clk.Now()))
	sysctls, err := sysctlAllowlist(cfg.AllowedUnsafeSysctls, ni.static.Machine.KernelVersion)
	if err != nil {
		return err
	}
	dcfg.Admit = admitter(sysctls, node.get, evictionMgr.Admit)
	if cl != nil {
		startCluster(ctx, clusterDeps{
			cfg: cfg, nodeName: nodeName, clock: clk, clients: cl, recorder: recorder, inputs: ni, node: node, sysctls: sysctls,
			pods: podMgr, statuses: statusMgr, workers: workers, mirrors: mirrors, pressureAdmit: evictionMgr.Admit,
		}, &dcfg)
	}
	go evictionMgr.Run(ctx)
	dispatcher := syncloop.NewDispatcher(dcfg)
	syncTicker := clk.NewTicker(time.Second)
	defer syncTicker.Stop()
	hkTicker := clk.NewTicker(2 * time.Second)
	defer hkTicker.Stop()
	klog.InfoS("Kubelet started", "nodeName", nodeName, "nodeIPs", hostIPs, "sources", sets.List(sourceNames))
	syncloop.Run(ctx, syncloop.Channels{
		Config: podCfg.Updates(), PLEG: p.Events(), Sync: syncTicker.C(), Housekeeping: hkTicker.C(),
	}, dispatcher)
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrLockContention) {
		// Another kubelet is taking over (an upgrade): leave cleanly, as upstream.
		klog.InfoS("Lock file contention detected, exiting", "path", flags.LockFilePath)
		return nil
	}
	if cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// hostInfo is what start-up learns about the machine.
type hostInfo struct {
	nodeName string
	ips      []string
	podsDir  string
}

// prepareHost checks and prepares the machine: node name, swap, the
// kubelet's own OOM score and rlimits, its directories and addresses.
func prepareHost(cfg *kubeletconfig.KubeletConfiguration, flags options.KubeletFlags) (hostInfo, error) {
	var h hostInfo
	var err error
	if h.nodeName, err = options.NodeName(flags.HostnameOverride); err != nil {
		return h, err
	}
	if err := checkSwap(derefBool(cfg.FailSwapOn, true), os.ReadFile); err != nil {
		return h, err
	}
	applyOOMScore(derefInt32(cfg.OOMScoreAdj))
	applyMaxOpenFiles(cfg.MaxOpenFiles)
	h.podsDir = filepath.Join(flags.RootDirectory, "pods")
	for _, dir := range []string{flags.RootDirectory, h.podsDir, cfg.PodLogsDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return h, fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	h.ips, err = nodeIPs(flags.NodeIP, h.nodeName)
	return h, err
}

// startSources starts every configured pod source feeding one mux and
// returns it with the names of the sources to wait for.
func startSources(ctx context.Context, cfg *kubeletconfig.KubeletConfiguration, nodeName string, api kubeclient.Interface, clk clock.Clock) (*sources.PodConfig, sets.Set[string]) {
	podCfg := sources.NewPodConfig(sources.MuxConfig{Context: ctx, Clock: clk})
	names := sets.New[string]()
	if cfg.StaticPodPath != "" {
		names.Insert(sources.FileSource)
		go sources.RunFileSource(ctx, sources.FileSourceConfig{
			Path: cfg.StaticPodPath, NodeName: nodeName, Period: cfg.FileCheckFrequency.Duration,
			Clock: clk, Out: podCfg.Channel(sources.FileSource),
		})
	}
	if cfg.StaticPodURL != "" {
		names.Insert(sources.HTTPSource)
		go sources.RunURLSource(ctx, sources.URLSourceConfig{
			URL: cfg.StaticPodURL, Header: cfg.StaticPodURLHeader, NodeName: nodeName,
			Period: cfg.HTTPCheckFrequency.Duration, Client: &http.Client{Timeout: 10 * time.Second},
			Clock: clk, Out: podCfg.Channel(sources.HTTPSource),
		})
	}
	if api != nil {
		names.Insert(sources.ApiserverSource)
		go sources.RunAPISource(ctx, sources.APISourceConfig{Client: api, NodeName: nodeName, Out: podCfg.Channel(sources.ApiserverSource)})
	}
	if names.Len() == 0 {
		klog.InfoS("No pod sources configured (staticPodPath, staticPodURL or --kubeconfig); the kubelet will run no pods")
	}
	return podCfg, names
}

// serverDeps is what the HTTP endpoints read.
type serverDeps struct {
	cfg      *kubeletconfig.KubeletConfiguration
	flags    options.KubeletFlags
	nodeName string
	hostIPs  []string
	clock    clock.Clock
	checks   []server.HealthCheck
	client   *cri.Client
	pods     *podmanager.Manager
	statuses *statusmanager.Manager
	runtime  *kuberuntime.Manager
	stats    *stats.Provider
	// api is the API server client (nil in standalone mode) for webhook
	// authentication and authorization.
	api kubeclient.Interface
}

// startServers starts the healthz port, the read-only port and the
// authenticated kubelet API, as configured.
func startServers(ctx context.Context, d serverDeps) error {
	cfg := d.cfg
	if cfg.HealthzPort != nil && *cfg.HealthzPort > 0 {
		addr := net.JoinHostPort(cfg.HealthzBindAddress, strconv.Itoa(int(*cfg.HealthzPort)))
		if err := server.Serve(ctx, "healthz", addr, server.HealthzMux(d.checks)); err != nil {
			return err
		}
	}
	statsProvider := d.stats
	logsCfg := logs.Config{Pods: d.pods, Runtime: d.client.Runtime, Statuses: d.statuses, Clock: d.clock}
	resourceRegistry := prometheus.NewRegistry()
	resourceRegistry.MustRegister(statsProvider.ResourceMetricsCollector())
	apiCfg := server.APIConfig{
		Pods: d.pods, Statuses: d.statuses, Checks: d.checks, Config: cfg,
		RunningPods: func(ctx context.Context) ([]v1.Pod, error) { return runningPods(ctx, d.runtime) },
		Metrics: promhttp.HandlerFor(metrics.NewRegistry(append(append(append(pleg.Collectors(), imagegc.Collectors()...), eviction.Collectors()...),
			statsProvider.VolumeStatsCollector())...), promhttp.HandlerOpts{}),
		Summary:       statsProvider.SummaryHandler(),
		ContainerLogs: logs.ContainerLogsHandler(logsCfg),
		NodeLogs:      logs.NodeLogsHandler(logsCfg),
		Streaming: streaming.Handler(streaming.Config{
			Pods: d.pods, Runtime: d.client.Runtime, StreamIdleTimeout: cfg.StreamingConnectionIdleTimeout.Duration,
		}),
		ResourceMetrics: promhttp.HandlerFor(resourceRegistry, promhttp.HandlerOpts{}),
		ProbeMetrics:    promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{}),
		EnableDebugging: derefBool(cfg.EnableDebuggingHandlers, true),
		EnableProfiling: derefBool(cfg.EnableProfilingHandler, true),
	}
	if cfg.ReadOnlyPort > 0 {
		addr := net.JoinHostPort(cfg.Address, strconv.Itoa(int(cfg.ReadOnlyPort)))
		if err := server.Serve(ctx, "read-only", addr, server.ReadOnlyMux(apiCfg)); err != nil {
			return err
		}
	}
	if !derefBool(cfg.EnableServer, true) || cfg.Port <= 0 {
		return nil
	}
	filter, err := auth.New(auth.Config{Authentication: cfg.Authentication, Authorization: cfg.Authorization, Client: d.api, NodeName: d.nodeName, Clock: d.clock})
	if err != nil {
		return fmt.Errorf("kubelet API on port %d: %w (in standalone mode set authentication.webhook.enabled=false and authorization.mode=AlwaysAllow, or enableServer=false)", cfg.Port, err)
	}
	tlsCfg, err := server.TLSConfig(server.TLSOptions{
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSPrivateKeyFile, CertDir: d.flags.CertDirectory,
		Hostname: d.nodeName, IPs: d.hostIPs, MinVersion: cfg.TLSMinVersion, CipherSuites: cfg.TLSCipherSuites,
		ClientCAs: filter.ClientCAs(),
	})
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(cfg.Address, strconv.Itoa(int(cfg.Port)))
	return server.ServeTLS(ctx, "kubelet API", addr, filter.Wrap(server.APIMux(apiCfg)), tlsCfg)
}

// waitForRuntime retries Version with back-off until the runtime answers.
func waitForRuntime(ctx context.Context, rs runtimeapi.RuntimeServiceClient, clk clock.Clock) (*runtimeapi.VersionResponse, error) {
	delay := 500 * time.Millisecond
	for {
		v, err := rs.Version(ctx, &runtimeapi.VersionRequest{})
		if err == nil {
			return v, nil
		}
		klog.ErrorS(err, "Container runtime is not reachable yet, retrying", "after", delay)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("container runtime never became reachable: %w", err)
		case <-clk.After(delay):
		}
		if delay < 30*time.Second {
			delay *= 2
		}
	}
}

// runtimeHealth polls the runtime's Status so healthz can report it.
type runtimeHealth struct {
	mu   sync.Mutex
	last error
}

func (h *runtimeHealth) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

func (h *runtimeHealth) run(ctx context.Context, rs runtimeapi.RuntimeServiceClient, clk clock.Clock) {
	for {
		resp, err := rs.Status(ctx, &runtimeapi.StatusRequest{})
		if err == nil {
			for _, c := range resp.GetStatus().GetConditions() {
				if c.Type == runtimeapi.RuntimeReady && !c.Status {
					err = fmt.Errorf("container runtime is not ready: %s: %s", c.Reason, c.Message)
				}
			}
		} else {
			err = fmt.Errorf("container runtime is down: %w", err)
		}
		h.mu.Lock()
		h.last = err
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-clk.After(5 * time.Second):
		}
	}
}

func machineMemoryBytes() int64 {
	var info syscallSysinfo
	if sysinfo(&info) == nil {
		return info.total
	}
	return 0
}

func derefInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func derefInt32AsFloat(p *int32) float32 { return float32(derefInt32(p)) }

func derefBool(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
