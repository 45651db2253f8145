package app

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/pods/podinputs"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/volume"
	"github.com/seed-kubelet/kubelet/internal/volume/csi"
	"github.com/seed-kubelet/kubelet/internal/volume/pluginwatcher"
)

// storageDeps is what the node's storage needs.
type storageDeps struct {
	rootDir, podsDir, nodeName string
	clock                      clock.WithTicker
	// client, inputs and tokens are nil in standalone mode.
	client kubeclient.Interface
	inputs *podinputs.Source
	tokens *podinputs.Tokens
	// node is the Node as last known (the API's once registered).
	node *nodestatus.Latest
	// Image volumes: the puller, pull credentials (may be nil) and the
	// runtime's CRI Version.
	puller                      *kuberuntime.ImagePuller
	creds                       kuberuntime.PullCredentials
	runtimeName, runtimeVersion string
}

// storage is the node's storage: the CSI node side with the plugin
// watcher that registers drivers, claims and image volumes.
type storage struct {
	csi    *csi.Plugin
	claims volume.Claims
	images volume.ImageVolumes

	// inUseChanged wakes the node status when a volume that needs
	// attaching starts being used.
	inUseChanged chan struct{}

	mu         sync.Mutex
	storageErr error // CSINode not initialized yet
}

var _ nodestatus.StorageStatus = (*storage)(nil)

// startStorage registers CSI drivers from <root-dir>/plugins_registry and,
// in cluster mode, caches CSIDriver objects and initializes the CSINode.
func startStorage(ctx context.Context, d storageDeps) (*storage, error) {
	s := &storage{images: &imageVolumes{puller: d.puller, creds: d.creds,
		unsupported: volume.ImageVolumeSupport(d.runtimeName, d.runtimeVersion)},
		inUseChanged: make(chan struct{}, 1)}
	drivers := csi.NewDrivers()
	reg := &csi.Registrar{Drivers: drivers}
	cfg := csi.Config{RootDir: d.rootDir, PodsDir: d.podsDir, NodeName: d.nodeName, Drivers: drivers,
		Node: d.node.Node, InUseChanged: s.pokeInUse}
	if d.client != nil {
		cache := csi.NewDriverCache(d.client)
		go cache.Run(ctx)
		nodeInfo := csi.NewNodeInfo(d.client, d.nodeName, d.clock)
		reg.NodeInfo = nodeInfo
		go nodeInfo.Initialize(ctx, s.setStorageErr)
		cfg.Client, cfg.CSIDrivers = d.client, cache
		if d.inputs != nil {
			cfg.Secrets = d.inputs
		}
		if d.tokens != nil {
			cfg.Tokens = d.tokens
		}
		s.claims = claimsClient{d.client}
	}
	s.csi = csi.New(cfg)
	w := pluginwatcher.New(pluginwatcher.Config{
		Dir: filepath.Join(d.rootDir, "plugins_registry"), Clock: d.clock,
		Handlers: map[string]pluginwatcher.Handler{registerapi.CSIPlugin: reg},
	})
	if err := w.Run(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *storage) setStorageErr(err error) {
	s.mu.Lock()
	s.storageErr = err
	s.mu.Unlock()
}

// Err is the storage error the Ready condition reports.
func (s *storage) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storageErr
}

// VolumesInUse are the CSI volumes pods on the node use.
func (s *storage) VolumesInUse() []v1.UniqueVolumeName { return s.csi.VolumesInUse() }

func (s *storage) pokeInUse() {
	select {
	case s.inUseChanged <- struct{}{}:
	default: // a wake is already pending
	}
}

// claimsClient reads claims and volumes straight from the API server.
type claimsClient struct{ c kubeclient.Interface }

func (c claimsClient) PersistentVolumeClaim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	return c.c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (c claimsClient) PersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return c.c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// imageVolumes pulls image volumes' images through the image puller.
type imageVolumes struct {
	puller      *kuberuntime.ImagePuller
	creds       kuberuntime.PullCredentials
	unsupported error // the runtime cannot mount images
}

func (iv *imageVolumes) EnsureImageVolume(ctx context.Context, pod *v1.Pod, ref string, policy v1.PullPolicy) (string, error) {
	if iv.unsupported != nil {
		return "", iv.unsupported
	}
	// The pull policy was defaulted with the pod (Always for :latest).
	// Credentials are asked for only when the puller pulls (lazily).
	c := &v1.Container{Name: "image-volume", Image: ref, ImagePullPolicy: policy}
	return iv.puller.EnsureImage(ctx, pod, c, nil, iv.creds)
}

// pluginVolumeStats reports the pod's claim and CSI volumes to the stats:
// CSI volumes through NodeGetVolumeStats, local volumes measured on disk.
func pluginVolumeStats(volumes *volume.Manager, plugin *csi.Plugin) func(pod *v1.Pod) []stats.PluginVolume {
	return func(pod *v1.Pod) []stats.PluginVolume {
		var out []stats.PluginVolume
		for _, mv := range volumes.MeasuredVolumes(pod) {
			pv := stats.PluginVolume{Name: mv.Name, Path: mv.Path}
			if mv.Claim != "" {
				pv.PVC = &statsapi.PVCReference{Name: mv.Claim, Namespace: pod.Namespace}
			}
			if mv.CSISpec == "" {
				path := mv.Path
				pv.Measure = func() (stats.VolumeUsage, error) { return stats.MeasureDir(path) }
			} else {
				uid, spec := string(pod.UID), mv.CSISpec
				pv.Measure = func() (stats.VolumeUsage, error) {
					ctx, cancel := context.WithTimeout(context.Background(), csiStatsTimeout)
					defer cancel()
					u, err := plugin.VolumeStats(ctx, uid, spec)
					if err != nil {
						return stats.VolumeUsage{}, err
					}
					return stats.VolumeUsage{UsedBytes: nonNeg(u.UsedBytes), CapacityBytes: nonNeg(u.CapacityBytes), AvailableBytes: nonNeg(u.AvailableBytes),
						Inodes: nonNeg(u.Inodes), InodesFree: nonNeg(u.InodesFree), InodesUsed: nonNeg(u.InodesUsed)}, nil
				}
			}
			out = append(out, pv)
		}
		return out
	}
}

// csiStatsTimeout bounds one NodeGetVolumeStats call.
const csiStatsTimeout = 30 * time.Second

func nonNeg(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}
