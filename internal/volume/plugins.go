package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/volume/csi"
	"github.com/seed-kubelet/kubelet/internal/volume/mountpoint"
)

// pluginLocalVolume is the directory of local PersistentVolumes in a pod.
const pluginLocalVolume = "kubernetes.io~local-volume"

// Claims reads claims and the volumes bound to them (the API server).
type Claims interface {
	PersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	PersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// CSI is the CSI node side (internal/volume/csi).
type CSI interface {
	SetUp(ctx context.Context, r csi.Request) (csi.Result, error)
	// SetUpBlock maps a volumeMode Block volume and returns its device.
	SetUpBlock(ctx context.Context, r csi.Request) (string, error)
	TearDownPod(ctx context.Context, uid string) error
	// RequiresRepublish reports whether the driver wants NodePublishVolume
	// again periodically (its CSIDriver's requiresRepublish).
	RequiresRepublish(driver string) bool
	// HasVolumes reports whether the pod has CSI volumes on disk.
	HasVolumes(uid string) bool
	// CleanupOrphans tears down the CSI volumes of pods not in keep and
	// unstages volumes no pod publishes.
	CleanupOrphans(ctx context.Context, keep map[string]bool) error
}

var _ CSI = (*csi.Plugin)(nil)

// ImageVolumes resolves image volumes: the image pulled by the volume's
// pull policy, or an error when the runtime cannot mount images.
type ImageVolumes interface {
	EnsureImageVolume(ctx context.Context, pod *v1.Pod, ref string, policy v1.PullPolicy) (string, error)
}

// isPluginVolume reports whether vol is set up by a plugin rather than in
// the pod directory by this package: claims, CSI inline and image volumes.
func isPluginVolume(vol *v1.Volume) bool {
	return vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil || vol.CSI != nil || vol.Image != nil
}

// pluginVolume is a plugin volume set up for a pod.
type pluginVolume struct {
	path     string
	readOnly bool
	// image is set for an image volume: what the runtime mounts.
	image *runtimeapi.ImageSpec
	// republish is the CSI request to repeat for requiresRepublish drivers.
	republish *csi.Request
	// device is set for a block volume: the host path of its device.
	device string
	// claim is the claim's name (stats report it).
	claim string
	// csiSpec is the CSI volume's spec name (its directory), local marks a
	// local PersistentVolume: the volumes whose usage is reported.
	csiSpec string
	local   bool
}

// MeasuredVolume is a plugin volume set up for a pod whose usage the stats
// report: a CSI volume (measured by its driver's NodeGetVolumeStats) or a
// local PersistentVolume (measured on disk).
type MeasuredVolume struct {
	// Name is the pod's volume name; Claim the claim it comes from ("" for
	// an inline volume).
	Name, Claim string
	// Path is the published directory.
	Path string
	// CSISpec is the CSI volume's spec name; empty for a local volume.
	CSISpec string
}

// MeasuredVolumes lists the pod's plugin volumes set up by this process
// whose usage is reported (hostPath and image volumes are not, as upstream).
func (m *Manager) MeasuredVolumes(pod *v1.Pod) []MeasuredVolume {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []MeasuredVolume
	for name, st := range m.plugins[string(pod.UID)] {
		if st.csiSpec != "" || st.local {
			out = append(out, MeasuredVolume{Name: name, Claim: st.claim, Path: st.path, CSISpec: st.csiSpec})
		}
	}
	return out
}

func (m *Manager) pluginState(uid, name string) (pluginVolume, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv, ok := m.plugins[uid][name]
	return pv, ok
}

func (m *Manager) setPluginState(uid, name string, pv pluginVolume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plugins[uid] == nil {
		m.plugins[uid] = map[string]pluginVolume{}
	}
	m.plugins[uid][name] = pv
}

// ensurePlugin sets up a plugin volume unless it already is, and returns
// its host path ("" for an image volume). Callers hold the pod lock.
func (m *Manager) ensurePlugin(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, error) {
	uid := string(pod.UID)
	if st, ok := m.pluginState(uid, vol.Name); ok {
		return st.path, nil
	}
	st, err := m.setUpPlugin(ctx, pod, vol)
	if err != nil {
		return "", err
	}
	m.setPluginState(uid, vol.Name, st)
	klog.V(3).InfoS("Volume set up", "pod", klog.KObj(pod), "volume", vol.Name, "path", st.path)
	return st.path, nil
}

func (m *Manager) setUpPlugin(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (pluginVolume, error) {
	switch {
	case vol.Image != nil:
		if m.cfg.Images == nil {
			return pluginVolume{}, errors.New("image volumes are not available")
		}
		ref, err := m.cfg.Images.EnsureImageVolume(ctx, pod, vol.Image.Reference, vol.Image.PullPolicy)
		if err != nil {
			return pluginVolume{}, err
		}
		return pluginVolume{readOnly: true, image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: vol.Image.Reference}}, nil
	case vol.CSI != nil:
		return m.setUpCSI(ctx, pod, csi.Request{Pod: pod, SpecName: vol.Name, Inline: vol.CSI}, "")
	}
	name, readOnly, ephemeral, _ := ClaimOf(pod, vol)
	if m.cfg.Claims == nil {
		return pluginVolume{}, &ClaimError{pod.Namespace, name, errors.New("claims need the API server: the kubelet runs in standalone mode")}
	}
	pvc, err := m.cfg.Claims.PersistentVolumeClaim(ctx, pod.Namespace, name)
	if err != nil {
		return pluginVolume{}, &ClaimError{pod.Namespace, name, fmt.Errorf("failed to fetch PVC from API server: %w", err)}
	}
	if err := CheckClaim(pod, ephemeral, pvc); err != nil {
		return pluginVolume{}, &ClaimError{pod.Namespace, name, err}
	}
	pv, err := m.cfg.Claims.PersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return pluginVolume{}, &ClaimError{pod.Namespace, name, fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err)}
	}
	if err := CheckBinding(pvc, pv); err != nil {
		return pluginVolume{}, &ClaimError{pod.Namespace, name, err}
	}
	if err := CheckVolumeMode(pod, vol.Name, pv); err != nil {
		return pluginVolume{}, &ClaimError{pod.Namespace, name, err}
	}
	block := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock
	var st pluginVolume
	switch {
	case pv.Spec.CSI != nil && block:
		if m.cfg.CSI == nil {
			return pluginVolume{}, &csi.OpError{Op: "MapVolume.SetUpDevice", Volume: pv.Name, Err: errors.New("CSI volumes are not available")}
		}
		dev, published := csi.BlockPublished(m.cfg.PodsDir, string(pod.UID), pv.Name)
		if !published {
			dev, err = m.cfg.CSI.SetUpBlock(ctx, csi.Request{Pod: pod, SpecName: pv.Name, PV: pv, ReadOnly: readOnly})
		}
		st = pluginVolume{device: dev, readOnly: readOnly}
	case pv.Spec.CSI != nil:
		st, err = m.setUpCSI(ctx, pod, csi.Request{Pod: pod, SpecName: pv.Name, PV: pv, ReadOnly: readOnly}, name)
	case block && pv.Spec.Local != nil:
		var dev string
		dev, err = m.mapLocalDevice(pod, pv)
		st = pluginVolume{device: dev, readOnly: readOnly}
	case block:
		err = &csi.OpError{Op: "MapVolume.SetUpDevice", Volume: pv.Name, Err: fmt.Errorf("volumeMode Block is supported for CSI and local volumes, not for source %s", SourceName(&pv.Spec.PersistentVolumeSource))}
	case pv.Spec.Local != nil:
		st, err = m.setUpLocal(pod, pv, readOnly)
	case pv.Spec.HostPath != nil:
		t := v1.HostPathUnset
		if pv.Spec.HostPath.Type != nil {
			t = *pv.Spec.HostPath.Type
		}
		st = pluginVolume{path: pv.Spec.HostPath.Path, readOnly: readOnly}
		if err = CheckHostPath(pv.Spec.HostPath.Path, t); err != nil {
			err = &csi.OpError{Op: csi.OpSetUp, Volume: pv.Name, Err: err}
		}
	default:
		err = &csi.OpError{Op: csi.OpSetUp, Volume: pv.Name, Err: fmt.Errorf("PersistentVolume %q has volume source %q, which this kubelet does not mount (it mounts csi, local and hostPath)", pv.Name, SourceName(&pv.Spec.PersistentVolumeSource))}
	}
	st.claim = name
	return st, err
}

func (m *Manager) setUpCSI(ctx context.Context, pod *v1.Pod, r csi.Request, claim string) (pluginVolume, error) {
	if m.cfg.CSI == nil {
		return pluginVolume{}, &csi.OpError{Op: csi.OpSetUp, Volume: r.SpecName, Err: errors.New("CSI volumes are not available")}
	}
	gid, policy := FSGroup(pod)
	r.FSGroup = gid
	var res csi.Result
	if csi.Published(m.cfg.PodsDir, string(pod.UID), r.SpecName) {
		// Published by an earlier kubelet process: in use by the pod's
		// containers, which must not wait for the driver to register again.
		res.Path = csi.PodMountPath(m.cfg.PodsDir, string(pod.UID), r.SpecName)
		klog.V(2).InfoS("CSI volume found published on disk", "pod", klog.KObj(pod), "volume", r.SpecName, "path", res.Path)
	} else {
		var err error
		if res, err = m.cfg.CSI.SetUp(ctx, r); err != nil {
			return pluginVolume{}, err
		}
	}
	if res.ApplyFSGroup {
		if err := setOwnership(res.Path, gid, policy, false); err != nil {
			return pluginVolume{}, &csi.OpError{Op: csi.OpSetUp, Volume: r.SpecName, Err: fmt.Errorf("applyFSGroup failed: %w", err)}
		}
	}
	readOnly := r.ReadOnly || (r.Inline != nil && r.Inline.ReadOnly != nil && *r.Inline.ReadOnly)
	st := pluginVolume{path: res.Path, readOnly: readOnly, claim: claim, csiSpec: r.SpecName}
	driver := ""
	if r.PV != nil {
		driver = r.PV.Spec.CSI.Driver
	} else {
		driver = r.Inline.Driver
	}
	if m.cfg.CSI.RequiresRepublish(driver) {
		st.republish = &r
	}
	return st, nil
}

// setUpLocal bind-mounts a local PersistentVolume's path into the pod's
// volume directory (read-only when the claim is), as upstream's local
// volume plugin does, and gives it to the fsGroup unless read-only.
func (m *Manager) setUpLocal(pod *v1.Pod, pv *v1.PersistentVolume, readOnly bool) (pluginVolume, error) {
	fail := func(err error) (pluginVolume, error) {
		return pluginVolume{}, &csi.OpError{Op: csi.OpSetUp, Volume: pv.Name, Err: err}
	}
	src := pv.Spec.Local.Path
	fi, err := os.Stat(src)
	if err != nil {
		return fail(fmt.Errorf("path %q does not exist", src))
	}
	switch {
	case isBlockDevice(fi):
		if src, err = m.mountLocalDevice(pv, src); err != nil {
			return pluginVolume{}, &csi.OpError{Op: csi.OpMountDevice, Volume: pv.Name, Err: err}
		}
	case !fi.IsDir():
		return fail(fmt.Errorf("path %q is neither a directory nor a block device", src))
	}
	dir := filepath.Join(m.cfg.PodsDir, string(pod.UID), "volumes", pluginLocalVolume, pv.Name)
	mounted, err := mountpoint.IsMountPoint(dir)
	if err != nil {
		return fail(err)
	}
	if !mounted {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fail(err)
		}
		if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
			os.Remove(dir)
			return fail(fmt.Errorf("mount failed: bind %s to %s: %w", src, dir, err))
		}
		if readOnly {
			if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				unix.Unmount(dir, 0)
				os.Remove(dir)
				return fail(fmt.Errorf("mount failed: remount %s read-only: %w", dir, err))
			}
		}
		klog.V(2).InfoS("Mounted local volume", "pod", klog.KObj(pod), "pv", pv.Name, "path", src, "target", dir, "readOnly", readOnly)
		if !readOnly {
			gid, policy := FSGroup(pod)
			if err := setOwnership(dir, gid, policy, false); err != nil {
				return fail(fmt.Errorf("set ownership of %s: %w", dir, err))
			}
		}
	}
	return pluginVolume{path: dir, readOnly: readOnly, local: true}, nil
}

// tearDownPlugins unpublishes the pod's CSI volumes and unmounts its local
// volumes, from what is on disk. Callers hold the pod lock.
func (m *Manager) tearDownPlugins(ctx context.Context, uid string) error {
	var errs []error
	if m.cfg.CSI != nil {
		if err := m.cfg.CSI.TearDownPod(ctx, uid); err != nil {
			errs = append(errs, err)
		}
	}
	base := filepath.Join(m.cfg.PodsDir, uid, "volumes", pluginLocalVolume)
	entries, err := os.ReadDir(base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		if mounted, err := mountpoint.IsMountPoint(dir); err == nil && mounted {
			if err := unix.Unmount(dir, 0); err != nil {
				errs = append(errs, fmt.Errorf("UnmountVolume.TearDown failed for volume %q: unmount %s: %w", e.Name(), dir, err))
				continue
			}
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := m.releaseLocalDevices(uid); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		m.mu.Lock()
		delete(m.plugins, uid)
		m.mu.Unlock()
	}
	return errors.Join(errs...)
}

// TearDownPluginVolumes tears down the pod's CSI and local volumes (a pod
// that finished, or one being removed), as upstream unmounts the volumes of
// terminated pods.
func (m *Manager) TearDownPluginVolumes(ctx context.Context, uid string) error {
	l := m.podLock(uid)
	l.Lock()
	defer l.Unlock()
	return m.tearDownPlugins(ctx, uid)
}

// CleanupOrphans tears down the plugin volumes of pod directories whose UID
// is not in keep, and unstages CSI volumes no pod publishes; the caller
// passes every pod the kubelet knows or the runtime runs.
func (m *Manager) CleanupOrphans(ctx context.Context, keep map[string]bool) error {
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		if _, err := os.Stat(filepath.Join(m.cfg.PodsDir, e.Name(), "volumes", pluginLocalVolume)); err == nil {
			if err := m.TearDownPluginVolumes(ctx, e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if m.cfg.CSI != nil {
		if err := m.cfg.CSI.CleanupOrphans(ctx, keep); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PodHasVolumes reports whether the pod's directory still holds plugin
// volumes (CSI, block or local) to tear down.
func (m *Manager) PodHasVolumes(uid string) bool {
	if m.cfg.CSI != nil && m.cfg.CSI.HasVolumes(uid) {
		return true
	}
	entries, err := os.ReadDir(filepath.Join(m.cfg.PodsDir, uid, "volumes", pluginLocalVolume))
	return err == nil && len(entries) > 0
}

// republish repeats NodePublishVolume for the pod's CSI volumes whose
// driver asks for it (tokens renewed, credentials rotated).
func (m *Manager) republish(ctx context.Context, pod *v1.Pod) []string {
	uid := string(pod.UID)
	m.mu.Lock()
	var reqs []csi.Request
	for _, st := range m.plugins[uid] {
		if st.republish != nil {
			r := *st.republish
			r.Pod = pod
			reqs = append(reqs, r)
		}
	}
	m.mu.Unlock()
	var errs []string
	for _, r := range reqs {
		if _, err := m.cfg.CSI.SetUp(ctx, r); err != nil {
			errs = append(errs, err.Error())
		}
	}
	return errs
}

// readOnlyPluginVolume reports whether a set-up plugin volume must be
// mounted read-only whatever the volumeMount says.
func (m *Manager) readOnlyPluginVolume(uid, name string) bool {
	st, ok := m.pluginState(uid, name)
	return ok && st.readOnly
}

// imageMount is the CRI mount of an image volume (nil for other volumes).
func (m *Manager) imageMount(uid string, vm v1.VolumeMount, env map[string]string) (*runtimeapi.Mount, error) {
	st, ok := m.pluginState(uid, vm.Name)
	if !ok || st.image == nil {
		return nil, nil
	}
	prop, err := Propagation(vm.MountPropagation)
	if err != nil {
		return nil, err
	}
	subPath, err := MountSubPath(vm, env)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{ContainerPath: vm.MountPath, Image: st.image, ImageSubPath: subPath, Readonly: true, Propagation: prop}, nil
}

// pluginFailureMessage words the FailedMount message of a plugin volume as
// upstream: the operation that failed and the volume's spec name (the PV's
// name for a claim), or the claim that cannot be used yet.
func pluginFailureMessage(f Failure) (string, bool) {
	var ce *ClaimError
	if errors.As(f.Err, &ce) {
		return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=[%s], unattached volumes=[%s], failed to process volumes=[%s]: %v", f.Volume, f.Volume, f.Volume, ce), true
	}
	var oe *csi.OpError
	if errors.As(f.Err, &oe) {
		return oe.Error(), true
	}
	return "", false
}

// Devices returns the CRI devices of a container's volumeDevices: the block
// volumes set up for the pod ("r" for a read-only claim, else "mrw", as
// upstream).
func (m *Manager) Devices(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Device, error) {
	var out []*runtimeapi.Device
	for _, vd := range c.VolumeDevices {
		st, ok := m.pluginState(string(pod.UID), vd.Name)
		if !ok || st.device == "" {
			return nil, fmt.Errorf("volume %q is not mapped as a block device for container %q", vd.Name, c.Name)
		}
		perms := "mrw"
		if st.readOnly {
			perms = "r"
		}
		out = append(out, &runtimeapi.Device{ContainerPath: vd.DevicePath, HostPath: st.device, Permissions: perms})
	}
	return out, nil
}
