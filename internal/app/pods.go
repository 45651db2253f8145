package app

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/localobjects"
	"github.com/seed-kubelet/kubelet/internal/node/imagegc"
	"github.com/seed-kubelet/kubelet/internal/node/logrotate"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/mirror"
	"github.com/seed-kubelet/kubelet/internal/pods/podinputs"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podsync"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/credentialprovider"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/runtime/pullprogress"
	"github.com/seed-kubelet/kubelet/internal/runtime/userns"
	"github.com/seed-kubelet/kubelet/internal/sources"
	"github.com/seed-kubelet/kubelet/internal/volume"
)

// podParts are what one pod's sync uses, and where pods come from.
type podParts struct {
	pods     *podmanager.Manager
	statuses *statusmanager.Manager
	// mirrors and targets are nil in standalone mode.
	mirrors *mirror.Manager
	targets *statusmanager.Targets
	// podWatch says whether the API source's pod watch is open; nil in
	// standalone mode.
	podWatch    *sources.WatchState
	runtime     *kuberuntime.Manager
	probes      *prober.Manager
	volumes     *volume.Manager
	storage     *storage
	syncer      *podsync.Syncer
	logRotation *logrotate.Manager
	imageGC     *imagegc.Manager
	// credentialPlugins are the credential provider plugins, or nil.
	credentialPlugins *credentialprovider.Plugins
	// allocations are the resources allocated to each pod and its resize
	// conditions (the allocated_pods_state checkpoint).
	allocations *allocation.Records
	// spec is the pod → CRI translation's settings.
	spec criconfig.Options
	// sources is the mux of the configured sources (sourceNames).
	sources     *sources.PodConfig
	sourceNames sets.Set[string]
	// objects are the local ConfigMaps and Secrets; nil in cluster mode.
	objects *localobjects.Store
	// changed is poked when the pods or their statuses may have changed
	// (for the local API); nil in cluster mode.
	changed podsChanged
}

// newPodParts builds the pod manager, the status manager, the runtime
// manager with its image puller, volumes (and the node's storage: CSI
// drivers, claims, image volumes) and log rotation, the prober and the
// syncer, and starts the pod sources.
func newPodParts(ctx context.Context, b *base, node *nodeParts) (*podParts, error) {
	cfg, clk := b.cfg, b.clock
	pods := podmanager.NewManager()
	var changed podsChanged
	var onStatus func(types.UID)
	if b.api == nil {
		changed = make(podsChanged, 1)
		onStatus = func(types.UID) { changed.poke() }
	}
	statuses := statusmanager.NewManager(onStatus)
	var inputs *podinputs.Source
	var mirrors *mirror.Manager
	var targets *statusmanager.Targets
	var podWatch *sources.WatchState
	if b.api != nil {
		podWatch = sources.NewWatchState(clk)
		inputs = podinputs.New(podinputs.Config{Client: b.api.main, Clock: clk, Recorder: b.recorder})
		mirrors = mirror.NewManager(mirror.New(mirror.Config{Client: b.api.main, NodeName: b.host.nodeName, NodeUID: node.latest.UID}), pods)
		targets = statusmanager.NewTargets(statusmanager.TargetsConfig{Pods: pods, Statuses: statuses, Recorder: b.recorder, Clock: clk})
	}
	spec := criOptions(cfg, b.flags.RootDirectory, b.host, node.containers.CgroupV2())
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
	progress, err := pullProgress(ctx, b)
	if err != nil {
		return nil, err
	}
	puller := kuberuntime.NewImagePuller(kuberuntime.ImageConfig{
		Images: b.cri.Image, Clock: clk, Recorder: b.recorder,
		SerializePulls: derefBool(cfg.SerializeImagePulls, true), MaxParallelPulls: int(derefInt32(cfg.MaxParallelImagePulls)),
		QPS: derefInt32AsFloat(cfg.RegistryPullQPS), Burst: int(cfg.RegistryBurst), Progress: progress,
	})
	volCfg := volume.Config{PodsDir: b.host.podsDir, NodeName: b.host.nodeName, ResourceField: spec.ResourceFieldValue, NodeAllocatable: spec.NodeAllocatable,
		RecursiveReadOnly: runtimeSupportsRRO(ctx, b.cri.Runtime)}
	creds := credentialprovider.Sources{Node: credentialprovider.NewNodeKeyring(b.flags.RootDirectory, clk)}
	var tokens *podinputs.Tokens
	var objects *localobjects.Store
	if inputs != nil {
		tokens = podinputs.NewTokens(podinputs.TokensConfig{Request: podinputs.ClientTokenRequester(b.api.main), Clock: clk})
		spec.EnvSource, creds.PullSecrets, volCfg.Sources, volCfg.Tokens = inputs, inputs.Credentials, inputs, tokens
	} else {
		// Standalone: config maps and secrets are the node's local objects.
		objects = localobjects.NewStore(localobjects.StoreConfig{Sources: []string{sources.FileSource, localObjectsSource}, Clock: clk})
		spec.EnvSource, volCfg.Sources = objects, objects
		creds.PullSecrets = func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
			return podinputs.PullSecretCredentials(ctx, objects, b.recorder, pod, image)
		}
	}
	plugins, err := credentialPlugins(b, tokens)
	if err != nil {
		return nil, err
	}
	creds.Plugins = plugins
	sd := storageDeps{rootDir: b.flags.RootDirectory, podsDir: b.host.podsDir, nodeName: b.host.nodeName, clock: clk, node: node.latest,
		puller: puller, creds: creds.Lookup, runtimeName: b.version.RuntimeName, runtimeVersion: b.version.RuntimeVersion}
	if inputs != nil {
		sd.client, sd.inputs, sd.tokens = b.api.main, inputs, tokens
	}
	store, err := startStorage(ctx, sd)
	if err != nil {
		return nil, err
	}
	volCfg.CSI, volCfg.Images = store.csi, store.images
	if store.claims != nil {
		volCfg.Claims = store.claims
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
		Runtime: b.cri.Runtime, Images: puller, Clock: clk, Recorder: b.recorder, Spec: spec, Credentials: creds.Lookup,
		PodsDir: b.host.podsDir, ContainerLogsDir: containerLogsDir, HostIPs: b.host.ips,
		DeadContainerMinAge: gcPolicy.MinAge, CleanLogs: logRotation.Clean,
		Mounts: volumes.Mounts, Devices: volumes.Devices, TearDownVolumes: volumes.TearDown, PodHasVolumes: volumes.PodHasVolumes,
		PodCgroups:     node.containers,
		RuntimeClasses: runtimeClasses(ctx, b),
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
		// After a restart a status builds on what the API holds (start
		// time, transition times, readiness), not on nothing.
		syncCfg.Mirrors, syncCfg.Reported = mirrors, targets.Reported
	}
	podCfg, names := startSources(ctx, b, objects, podWatch)
	return &podParts{
		pods: pods, statuses: statuses, mirrors: mirrors, targets: targets, podWatch: podWatch, runtime: runtimeMgr, probes: probes, syncer: podsync.New(syncCfg),
		logRotation: logRotation, imageGC: imageGC, sources: podCfg, sourceNames: names, credentialPlugins: creds.Plugins,
		volumes: volumes, storage: store, objects: objects, changed: changed, allocations: records, spec: spec,
	}, nil
}

// credentialPlugins starts the credential provider plugins of
// --image-credential-provider-config and --image-credential-provider-bin-dir
// (nil when neither is set); a bad configuration or a missing binary stops
// the kubelet, as upstream. In cluster mode plugins in service account
// token mode get the pod's service account and tokens bound to the pod.
func credentialPlugins(b *base, tokens *podinputs.Tokens) (*credentialprovider.Plugins, error) {
	if b.flags.ImageCredentialProviderConfig == "" && b.flags.ImageCredentialProviderBinDir == "" {
		return nil, nil
	}
	cfg := credentialprovider.Config{ConfigPath: b.flags.ImageCredentialProviderConfig, BinDir: b.flags.ImageCredentialProviderBinDir, Clock: b.clock}
	if b.api != nil {
		cfg.ServiceAccounts = apiServiceAccounts{client: b.api.main, tokens: tokens}
	}
	plugins, err := credentialprovider.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to register CRI auth plugins: %w", err)
	}
	return plugins, nil
}

// apiServiceAccounts are service accounts and their tokens from the API
// server, tokens through the kubelet's token cache.
type apiServiceAccounts struct {
	client kubeclient.Interface
	tokens *podinputs.Tokens
}

var _ credentialprovider.ServiceAccounts = apiServiceAccounts{}

func (a apiServiceAccounts) ServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	return a.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a apiServiceAccounts) Token(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (string, error) {
	got, err := a.tokens.AccountToken(ctx, namespace, name, tr.UID, tr.Spec)
	if err != nil {
		return "", err
	}
	return got.Status.Token, nil
}

// runtimeSupportsRRO reports whether the runtime's default handler ("",
// pods without a runtimeClassName) makes recursive read-only mounts, from
// its CRI status features; asked once, at the first such mount.
func runtimeSupportsRRO(ctx context.Context, rs runtimeapi.RuntimeServiceClient) func() bool {
	return sync.OnceValue(func() bool {
		resp, err := rs.Status(ctx, &runtimeapi.StatusRequest{})
		for _, h := range nodestatus.FromRuntimeStatus(resp, err).Handlers {
			if h.Name == "" {
				return h.Features != nil && h.Features.RecursiveReadOnlyMounts != nil && *h.Features.RecursiveReadOnlyMounts
			}
		}
		return false
	})
}

// pullProgress reads the progress of image pulls from containerd's content
// service on the image service socket (containerd serves it beside the CRI);
// another runtime makes the first long pull find out, at -v=4, that it
// cannot tell. The connection closes when ctx ends.
func pullProgress(ctx context.Context, b *base) (*pullprogress.Reporter, error) {
	endpoint := b.cfg.ImageServiceEndpoint
	if endpoint == "" {
		endpoint = b.cfg.ContainerRuntimeEndpoint
	}
	content, err := pullprogress.DialContainerd(endpoint)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { content.Close() })
	return pullprogress.New(pullprogress.Config{Source: content, Recorder: b.recorder, Clock: b.clock}), nil
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

// localObjectsSource names the --local-objects-dir source in the Store.
const localObjectsSource = "local-objects-dir"

// startSources starts every configured pod source (file, URL, API
// server) feeding one mux, and returns it with the names of the sources.
// With objects (standalone mode) the file sources read ConfigMaps and
// Secrets into it too, and the pods may reference them.
func startSources(ctx context.Context, b *base, objects *localobjects.Store, podWatch *sources.WatchState) (*sources.PodConfig, sets.Set[string]) {
	cfg, nodeName, clk := b.cfg, b.host.nodeName, b.clock
	podCfg := sources.NewPodConfig(sources.MuxConfig{Context: ctx, Clock: clk})
	names := sets.New[string]()
	objectsOf := func(source string) func([]localobjects.Entry) {
		if objects == nil {
			return nil
		}
		return func(e []localobjects.Entry) { objects.Set(source, e) }
	}
	if cfg.StaticPodPath != "" {
		names.Insert(sources.FileSource)
		go sources.RunFileSource(ctx, sources.FileSourceConfig{
			Path: cfg.StaticPodPath, NodeName: nodeName, Period: cfg.FileCheckFrequency.Duration,
			Clock: clk, Out: podCfg.Channel(sources.FileSource),
			LocalObjects: objects != nil, Objects: objectsOf(sources.FileSource),
		})
	}
	if dir := b.flags.LocalObjectsDir; dir != "" && objects != nil {
		go sources.RunFileSource(ctx, sources.FileSourceConfig{
			Path: dir, NodeName: nodeName, Period: cfg.FileCheckFrequency.Duration,
			Clock: clk, ObjectsOnly: true, Objects: objectsOf(localObjectsSource),
		})
	}
	if cfg.StaticPodURL != "" {
		names.Insert(sources.HTTPSource)
		go sources.RunURLSource(ctx, sources.URLSourceConfig{
			URL: cfg.StaticPodURL, Header: cfg.StaticPodURLHeader, NodeName: nodeName,
			Period: cfg.HTTPCheckFrequency.Duration, Client: &http.Client{Timeout: 10 * time.Second},
			Clock: clk, Out: podCfg.Channel(sources.HTTPSource), LocalObjects: objects != nil,
		})
	}
	if api := b.apiClient(); api != nil {
		names.Insert(sources.ApiserverSource)
		go sources.RunAPISource(ctx, sources.APISourceConfig{Client: api, NodeName: nodeName, Out: podCfg.Channel(sources.ApiserverSource), Watch: podWatch})
	}
	if names.Len() == 0 {
		klog.InfoS("No pod sources configured (staticPodPath, staticPodURL or --kubeconfig); the kubelet will run no pods")
	}
	return podCfg, names
}
