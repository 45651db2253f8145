package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"

	setupTimeout = 2 * time.Minute
)

// Sources fetches API objects that volumes project; nil in standalone mode,
// where every configMap/secret counts as not found.
type Sources interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Tokens hands out service account tokens (the TokenRequest API) for
// serviceAccountToken projections.
type Tokens interface {
	ServiceAccountToken(ctx context.Context, namespace, name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error)
	// ForgetPod drops what was cached for a pod that is gone.
	ForgetPod(uid types.UID)
}

// Config configures a Manager.
type Config struct {
	PodsDir string // <root-dir>/pods
	Sources Sources
	// Tokens serves serviceAccountToken projections; nil in standalone
	// mode, where such a projection fails to mount with a clear error.
	Tokens   Tokens
	NodeName string
	// ResourceField resolves downward API resourceFieldRefs.
	ResourceField ResourceFieldFunc
	// NodeAllocatable returns the node's allocatable resources, whose
	// memory bounds the tmpfs of memory-backed volumes; nil (or no memory
	// in it) leaves only the pod's limit and sizeLimit to bound them.
	NodeAllocatable func() v1.ResourceList
	// Claims resolves persistentVolumeClaim and ephemeral volumes; nil in
	// standalone mode, where such volumes fail to mount.
	Claims Claims
	// CSI sets up CSI volumes (PersistentVolumes and inline); nil leaves
	// them failing to mount.
	CSI CSI
	// Images resolves image volumes; nil leaves them failing to mount.
	Images ImageVolumes
	// RecursiveReadOnly reports whether the runtime's default handler can
	// make mounts recursively read-only (its CRI status features); nil
	// means it cannot.
	RecursiveReadOnly func() bool
}

// Manager sets up pod volumes and computes CRI mounts.
type Manager struct {
	cfg   Config
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// ready holds, per pod UID, the volumes set up since this process
	// started (or found published on disk); their contents are only
	// refreshed afterwards, never required again.
	ready map[string]map[string]bool
	// noswap: the kernel knows tmpfs's noswap option.
	noswap bool
	// plugins holds, per pod UID, the plugin volumes (claims, CSI, image)
	// set up since this process started.
	plugins map[string]map[string]pluginVolume
}

// New returns a Manager for cfg.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, locks: map[string]*sync.Mutex{}, ready: map[string]map[string]bool{},
		plugins: map[string]map[string]pluginVolume{}, noswap: TmpfsNoswapSupported(kernelRelease())}
}

func (m *Manager) podLock(uid string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.locks[uid]
	if !ok {
		l = &sync.Mutex{}
		m.locks[uid] = l
	}
	return l
}

func (m *Manager) forget(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.locks, uid)
	delete(m.ready, uid)
	delete(m.plugins, uid)
}

func (m *Manager) isReady(uid, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready[uid][name]
}

func (m *Manager) markReady(uid, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready[uid] == nil {
		m.ready[uid] = map[string]bool{}
	}
	m.ready[uid][name] = true
}

// VolumeDir returns where volume vol of pod uid lives on disk, or "" for
// hostPath (which lives at its own path) and unsupported types.
func VolumeDir(podsDir, uid string, vol *v1.Volume) string {
	plugin := ""
	switch {
	case vol.EmptyDir != nil:
		plugin = pluginEmptyDir
	case vol.ConfigMap != nil:
		plugin = pluginConfigMap
	case vol.Secret != nil:
		plugin = pluginSecret
	case vol.DownwardAPI != nil:
		plugin = pluginDownwardAPI
	case vol.Projected != nil:
		plugin = pluginProjected
	default:
		return ""
	}
	return filepath.Join(podsDir, uid, "volumes", plugin, vol.Name)
}

// isAPIData reports whether vol is published by the atomic writer (and is
// therefore always mounted read-only).
func isAPIData(vol *v1.Volume) bool {
	return vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil
}

// Mounts sets up (idempotently) every volume c mounts and returns its mounts.
func (m *Manager) Mounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	uid := string(pod.UID)
	l := m.podLock(uid)
	l.Lock()
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()

	vols := map[string]*v1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	done := map[string]string{}
	env := containerEnv(pod, c, m.cfg.NodeName)
	out := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for i, vm := range c.VolumeMounts {
		vol, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		hostPath, ok := done[vm.Name]
		if !ok {
			p, err := m.ensure(ctx, pod, vol)
			if err != nil {
				return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
			}
			done[vm.Name], hostPath = p, p
		}
		if isPluginVolume(vol) {
			if mnt, err := m.imageMount(uid, vm, env); mnt != nil || err != nil {
				if err != nil {
					return nil, err
				}
				out = append(out, mnt)
				continue
			}
		}
		mnt, err := m.mountFor(pod, c, i, vm, vol, hostPath, env)
		if err != nil {
			return nil, err
		}
		if m.readOnlyPluginVolume(uid, vm.Name) {
			mnt.Readonly = true
		}
		out = append(out, mnt)
	}
	return out, nil
}

// Refresh re-publishes configMap, secret, downwardAPI and projected volumes
// that are already set up, so updates appear inside running containers.
func (m *Manager) Refresh(ctx context.Context, pod *v1.Pod) error {
	uid := string(pod.UID)
	l := m.podLock(uid)
	l.Lock()
	defer l.Unlock()
	errs := m.republish(ctx, pod)
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isAPIData(vol) {
			continue
		}
		dir := VolumeDir(m.cfg.PodsDir, uid, vol)
		if _, err := os.Lstat(filepath.Join(dir, dataDirName)); err != nil {
			continue // never set up: nothing mounts it yet
		}
		if _, err := m.setUp(ctx, pod, vol); err != nil {
			errs = append(errs, fmt.Sprintf("volume %q: %v", vol.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("refresh volumes of pod %s/%s: %s", pod.Namespace, pod.Name, strings.Join(errs, "; "))
	}
	return nil
}

// setUp prepares vol on disk and returns the host path to mount.
func (m *Manager) setUp(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, error) {
	dir := VolumeDir(m.cfg.PodsDir, string(pod.UID), vol)
	switch {
	case vol.HostPath != nil:
		t := v1.HostPathUnset
		if vol.HostPath.Type != nil {
			t = *vol.HostPath.Type
		}
		return vol.HostPath.Path, CheckHostPath(vol.HostPath.Path, t)
	case vol.EmptyDir != nil:
		if err := m.setUpEmptyDir(vol.Name, dir, vol.EmptyDir, m.tmpfsSize(pod, vol)); err != nil {
			return "", err
		}
		if !m.isReady(string(pod.UID), vol.Name) {
			// As upstream, ownership is applied when the volume is set up,
			// not on every container start.
			gid, policy := FSGroup(pod)
			if err := setOwnership(dir, gid, policy, false); err != nil {
				return "", fmt.Errorf("set ownership of %s: %w", dir, err)
			}
		}
		return dir, nil
	case isAPIData(vol):
		payload, err := m.payload(ctx, pod, vol)
		if err != nil {
			return "", err
		}
		if MemoryBacked(vol) {
			if err := m.ensureAPIDataTmpfs(dir, m.tmpfsSize(pod, vol)); err != nil {
				return "", fmt.Errorf("volume %q: %w", vol.Name, err)
			}
		}
		gid, _ := FSGroup(pod)
		for k, f := range payload {
			f.Mode = fileModeFor(f.Mode, gid)
			payload[k] = f
		}
		if err := WriteAtomic(dir, payload); err != nil {
			return "", fmt.Errorf("write volume %q: %w", vol.Name, err)
		}
		// Read-only volumes always get the fsGroup, whatever the policy.
		if err := setOwnership(dir, gid, nil, true); err != nil {
			return "", fmt.Errorf("set ownership of %s: %w", dir, err)
		}
		klog.V(4).InfoS("Set up volume", "pod", klog.KObj(pod), "volume", vol.Name, "path", dir)
		return dir, nil
	}
	return "", fmt.Errorf("volume %q: unsupported volume type %s", vol.Name, SourceName(&vol.VolumeSource))
}

// ensureAPIDataTmpfs mounts the tmpfs a secret, downwardAPI or projected
// volume is written to. A volume an earlier kubelet already published on
// disk stays there (a tmpfs over it would hide the files from nothing but
// the running containers' future updates); new volumes never touch the disk.
func (m *Manager) ensureAPIDataTmpfs(dir string, size int64) error {
	mounted, err := isMounted(dir)
	if err != nil {
		return err
	}
	if !mounted {
		if _, err := os.Lstat(filepath.Join(dir, dataDirName)); err == nil {
			klog.InfoS("Volume was published on disk by an earlier kubelet; keeping it there until the pod goes", "path", dir)
			return nil
		}
	}
	return m.ensureTmpfs(dir, size)
}

func (m *Manager) payload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]FileProjection, error) {
	switch {
	case vol.ConfigMap != nil:
		s := vol.ConfigMap
		opt := s.Optional != nil && *s.Optional
		cm, err := m.configMap(ctx, pod.Namespace, s.Name, opt)
		if err != nil {
			return nil, err
		}
		return ConfigMapPayload(cm, s.Items, modeOr(s.DefaultMode, defaultFileMode), opt)
	case vol.Secret != nil:
		s := vol.Secret
		opt := s.Optional != nil && *s.Optional
		sec, err := m.secret(ctx, pod.Namespace, s.SecretName, opt)
		if err != nil {
			return nil, err
		}
		return SecretPayload(sec, s.Items, modeOr(s.DefaultMode, defaultFileMode), opt)
	case vol.DownwardAPI != nil:
		return DownwardAPIPayload(pod, vol.DownwardAPI.Items, modeOr(vol.DownwardAPI.DefaultMode, defaultFileMode), m.cfg.ResourceField)
	case vol.Projected != nil:
		return m.projected(ctx, pod, vol.Projected)
	}
	return nil, fmt.Errorf("volume %q: not an API data volume", vol.Name)
}

// projected merges its sources. clusterTrustBundle and podCertificate
// sources are not supported: they are skipped when other sources exist and
// are an error when they are all the volume has.
func (m *Manager) projected(ctx context.Context, pod *v1.Pod, p *v1.ProjectedVolumeSource) (map[string]FileProjection, error) {
	def := modeOr(p.DefaultMode, defaultFileMode)
	out := map[string]FileProjection{}
	supported := 0
	for _, src := range p.Sources {
		var (
			part map[string]FileProjection
			err  error
		)
		switch {
		case src.ConfigMap != nil:
			opt := src.ConfigMap.Optional != nil && *src.ConfigMap.Optional
			var cm *v1.ConfigMap
			if cm, err = m.configMap(ctx, pod.Namespace, src.ConfigMap.Name, opt); err == nil {
				part, err = ConfigMapPayload(cm, src.ConfigMap.Items, def, opt)
			}
		case src.Secret != nil:
			opt := src.Secret.Optional != nil && *src.Secret.Optional
			var s *v1.Secret
			if s, err = m.secret(ctx, pod.Namespace, src.Secret.Name, opt); err == nil {
				part, err = SecretPayload(s, src.Secret.Items, def, opt)
			}
		case src.DownwardAPI != nil:
			part, err = DownwardAPIPayload(pod, src.DownwardAPI.Items, def, m.cfg.ResourceField)
		case src.ServiceAccountToken != nil:
			part, err = m.serviceAccountToken(ctx, pod, src.ServiceAccountToken, def)
		default:
			klog.V(4).InfoS("Skipping unsupported projected source", "pod", klog.KObj(pod))
			continue
		}
		if err != nil {
			return nil, err
		}
		supported++
		for k, v := range part {
			out[k] = v
		}
	}
	if supported == 0 && len(p.Sources) > 0 {
		return nil, fmt.Errorf("projected volume has only unsupported sources (clusterTrustBundle and podCertificate are not implemented by this kubelet)")
	}
	return out, nil
}

// TokenRequestSpec is what a serviceAccountToken projection asks the
// TokenRequest API for: the projection's audience (none means the API
// server's own) and lifetime, bound to the pod so the token dies with it.
// It is pure.
func TokenRequestSpec(pod *v1.Pod, src *v1.ServiceAccountTokenProjection) authenticationv1.TokenRequestSpec {
	spec := authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}
	if src.Audience != "" {
		spec.Audiences = []string{src.Audience}
	}
	return spec
}

// TokenFileMode is the mode of a projected token file: the volume's default
// mode, but 0600 when the pod sets fsGroup (group read access then comes from
// the ownership change, as upstream).
func TokenFileMode(pod *v1.Pod, defaultMode int32) int32 {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		return 0o600
	}
	return defaultMode
}

func (m *Manager) serviceAccountToken(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection, def int32) (map[string]FileProjection, error) {
	if m.cfg.Tokens == nil {
		return nil, fmt.Errorf("serviceAccountToken projection %q: cannot get a service account token: the kubelet runs in standalone mode (no API server)", src.Path)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		return nil, fmt.Errorf("serviceAccountToken projection %q: the pod has no serviceAccountName", src.Path)
	}
	tr, err := m.cfg.Tokens.ServiceAccountToken(ctx, pod.Namespace, sa, TokenRequestSpec(pod, src))
	if err != nil {
		return nil, err
	}
	return map[string]FileProjection{src.Path: {Data: []byte(tr.Status.Token), Mode: TokenFileMode(pod, def)}}, nil
}

// configMap returns the config map, nil when it is missing and optional.
func (m *Manager) configMap(ctx context.Context, ns, name string, optional bool) (*v1.ConfigMap, error) {
	var (
		cm  *v1.ConfigMap
		err error
	)
	if m.cfg.Sources != nil {
		cm, err = m.cfg.Sources.ConfigMap(ctx, ns, name)
	}
	if m.cfg.Sources == nil || apierrors.IsNotFound(err) {
		if optional {
			return nil, nil
		}
		// Upstream's wording (its object cache names the resource singular).
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("get configmap %q: %w", name, err)
	}
	return cm, nil
}

// secret returns the secret, nil when it is missing and optional.
func (m *Manager) secret(ctx context.Context, ns, name string, optional bool) (*v1.Secret, error) {
	var (
		s   *v1.Secret
		err error
	)
	if m.cfg.Sources != nil {
		s, err = m.cfg.Sources.Secret(ctx, ns, name)
	}
	if m.cfg.Sources == nil || apierrors.IsNotFound(err) {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %q: %w", name, err)
	}
	return s, nil
}
