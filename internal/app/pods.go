package app

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/node/imagegc"
	"github.com/seed-kubelet/kubelet/internal/node/logrotate"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/mirror"
	"github.com/seed-kubelet/kubelet/internal/pods/podinputs"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podsync"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/runtime/userns"
	"github.com/seed-kubelet/kubelet/internal/sources"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// podParts are what one pod's sync uses, and where pods come from.
type podParts struct {
	pods     *podmanager.Manager
	statuses *statusmanager.Manager
	// mirrors is nil in standalone mode.
	mirrors     *mirror.Manager
	runtime     *kuberuntime.Manager
	probes      *prober.Manager
	syncer      *podsync.Syncer
	logRotation *logrotate.Manager
	imageGC     *imagegc.Manager
	// allocations are the resources allocated to each pod and its resize
	// conditions (the allocated_pods_state checkpoint).
	allocations *allocation.Records
	// spec is the pod → CRI translation's settings.
	spec criconfig.Options
	// sources is the mux of the configured sources (sourceNames).
	sources     *sources.PodConfig
	sourceNames sets.Set[string]
}

// newPodParts builds the pod manager, the status manager, the runtime
// manager with its image puller, volumes and log rotation, the prober and
// the syncer, and starts the pod sources.
func newPodParts(ctx context.Context, b *base, node *nodeParts) (*podParts, error) {
	cfg, clk := b.cfg, b.clock
	pods := podmanager.NewManager()
	statuses := statusmanager.NewManager(nil)
	var inputs *podinputs.Source
	var mirrors *mirror.Manager
	if b.api != nil {
		inputs = podinputs.New(podinputs.Config{Client: b.api.main, Clock: clk, Recorder: b.recorder})
		mirrors = mirror.NewManager(mirror.New(mirror.Config{Client: b.api.main, NodeName: b.host.nodeName, NodeUID: node.latest.UID}), pods)
	}
	spec := criOptions(cfg, b.host, node.containers.CgroupV2())
	users, err := newUserNamespaces(cfg, b)
	if err != nil {
		return nil, err
	}
	spec.UserNamespace = func(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
		uctx, cancel := context.WithTimeout(ctx, cfg.RuntimeRequestTimeout.Duration)
		defer cancel()
		return users.Options(uctx, pod, "")
	}
	// A resourceFieldRef to a missing limit reads the node's allocatable.
	spec.NodeAllocatable = node.latest.Allocatable
	volCfg := volume.Config{PodsDir: b.host.podsDir, NodeName: b.host.nodeName, ResourceField: spec.ResourceFieldValue, NodeAllocatable: spec.NodeAllocatable}
	var creds kuberuntime.PullCredentials
	if inputs != nil {
		spec.EnvSource, creds, volCfg.Sources = inputs, inputs.Credentials, inputs
		volCfg.Tokens = podinputs.NewTokens(podinputs.TokensConfig{Request: podinputs.ClientTokenRequester(b.api.main), Clock: clk})
	}
	volumes := volume.New(volCfg)
	lrc, err := logRotationSettings(cfg)
	if err != nil {
		return nil, err
	}
	lrc.Runtime, lrc.Clock = b.cri.Runtime, clk
	logRotation, err := logrotate.New(lrc)
	if err != nil {
		return nil, err
	}
	imageGC, err := imagegc.New(imagegc.Config{
		Images: b.cri.Image, Runtime: b.cri.Runtime, Clock: clk, Recorder: b.recorder,
		NodeRef: nodestatus.NodeRef(b.host.nodeName), Policy: imageGCPolicy(cfg), Metrics: b.metrics,
	})
	if err != nil {
		return nil, err
	}
	puller := kuberuntime.NewImagePuller(kuberuntime.ImageConfig{
		Images: b.cri.Image, Clock: clk, Recorder: b.recorder,
		SerializePulls: derefBool(cfg.SerializeImagePulls, true), MaxParallelPulls: int(derefInt32(cfg.MaxParallelImagePulls)),
		QPS: derefInt32AsFloat(cfg.RegistryPullQPS), Burst: int(cfg.RegistryBurst),
	})
	gcPolicy := containerGCPolicy(b.flags)
	allocated, err := allocation.OpenState(filepath.Join(b.flags.RootDirectory, allocation.AllocatedFile))
	if err != nil {
		return nil, err
	}
	actuated, err := allocation.OpenState(filepath.Join(b.flags.RootDirectory, allocation.ActuatedFile))
	if err != nil {
		return nil, err
	}
	records := allocation.NewRecords(allocated, clk, b.metrics)
	runtimeMgr := kuberuntime.NewManager(kuberuntime.Config{
		Actuated: actuated, PodResizer: node.containers, Metrics: b.metrics, UserNamespaces: users,
		Runtime: b.cri.Runtime, Images: puller, Clock: clk, Recorder: b.recorder, Spec: spec, Credentials: creds,
		PodsDir: b.host.podsDir, ContainerLogsDir: containerLogsDir, HostIPs: b.host.ips,
		DeadContainerMinAge: gcPolicy.MinAge, CleanLogs: logRotation.Clean,
		Mounts: volumes.Mounts, TearDownVolumes: volumes.TearDown, PodCgroups: node.containers,
		RunHook: func(ctx context.Context, h *v1.LifecycleHandler, c *v1.Container, id, podIP string, timeout time.Duration) error {
			return prober.RunHook(ctx, h, c, id, podIP, b.cri.Runtime, clk, timeout)
		},
	})
	probes := prober.New(prober.Config{Runtime: b.cri.Runtime, Clock: clk, Recorder: b.recorder, Metrics: b.metrics})
	syncCfg := podsync.Config{
		Runtime: runtimeMgr, Status: statuses, Clock: clk, HostIPs: b.host.ips, RuntimeName: b.version.RuntimeName,
		MaxDeadPerContainer: gcPolicy.MaxPerPodContainer, Volumes: volumes, Probes: probes, Recorder: b.recorder, Metrics: b.metrics,
		Allocations: records,
	}
	if mirrors != nil {
		syncCfg.Mirrors = mirrors
	}
	podCfg, names := startSources(ctx, b)
	return &podParts{
		pods: pods, statuses: statuses, mirrors: mirrors, runtime: runtimeMgr, probes: probes, syncer: podsync.New(syncCfg),
		logRotation: logRotation, imageGC: imageGC, sources: podCfg, sourceNames: names, allocations: records, spec: spec,
	}, nil
}

// newUserNamespaces is the user namespace manager (hostUsers: false pods):
// the kubelet's ID range as upstream picks it, userNamespaces.idsPerPod
// IDs per pod. A range that cannot serve maxPods pods stops the kubelet,
// as upstream.
func newUserNamespaces(cfg *kubeletconfig.KubeletConfiguration, b *base) (*userns.Manager, error) {
	var per uint32
	if cfg.UserNamespaces != nil && cfg.UserNamespaces.IDsPerPod != nil {
		per = uint32(*cfg.UserNamespaces.IDsPerPod)
	}
	first, length, err := userns.KubeletMappings(per)
	if err != nil {
		return nil, fmt.Errorf("create user namespace manager: kubelet mappings: %w", err)
	}
	m, err := userns.New(userns.Config{PodsDir: b.host.podsDir, IDsPerPod: per, MaxPods: int(cfg.MaxPods),
		FirstID: first, Length: length, Runtime: b.cri.Runtime})
	if err != nil {
		return nil, fmt.Errorf("create user namespace manager: %w", err)
	}
	return m, nil
}

// sourcesReady reports whether every configured pod source has been seen.
func (p *podParts) sourcesReady() bool { return p.sources.SeenAllSources(p.sourceNames) }

// startSources starts every configured pod source (file, URL, API
// server) feeding one mux, and returns it with the names of the sources.
func startSources(ctx context.Context, b *base) (*sources.PodConfig, sets.Set[string]) {
	cfg, nodeName, clk := b.cfg, b.host.nodeName, b.clock
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
	if api := b.apiClient(); api != nil {
		names.Insert(sources.ApiserverSource)
		go sources.RunAPISource(ctx, sources.APISourceConfig{Client: api, NodeName: nodeName, Out: podCfg.Channel(sources.ApiserverSource)})
	}
	if names.Len() == 0 {
		klog.InfoS("No pod sources configured (staticPodPath, staticPodURL or --kubeconfig); the kubelet will run no pods")
	}
	return podCfg, names
}
