package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/volume/mountpoint"
)

// Block volumes (volumeMode: Block) live where upstream's csiBlockMapper
// keeps them:
//
//	<root>/plugins/kubernetes.io/csi/volumeDevices/<spec>/data/vol_data.json
//	<root>/plugins/kubernetes.io/csi/volumeDevices/staging/<spec>        NodeStageVolume target
//	<root>/plugins/kubernetes.io/csi/volumeDevices/publish/<spec>/<uid>  NodePublishVolume target (a device file)
//	<podsDir>/<uid>/volumeDevices/kubernetes.io~csi/<spec>              symlink to the published device
const volumeDevicesDir = "volumeDevices"

func (p *Plugin) blockBase() string {
	return filepath.Join(p.cfg.RootDir, "plugins", PluginName, volumeDevicesDir)
}

func (p *Plugin) blockDataDir(spec string) string {
	return filepath.Join(p.blockBase(), EscapeQualifiedName(spec), "data")
}

func (p *Plugin) blockStagingPath(spec string) string {
	return filepath.Join(p.blockBase(), "staging", EscapeQualifiedName(spec))
}

func (p *Plugin) blockPublishPath(spec, uid string) string {
	return filepath.Join(p.blockBase(), "publish", EscapeQualifiedName(spec), uid)
}

// PodDeviceDir is where a pod's block volumes are mapped.
func PodDeviceDir(podsDir, uid string) string {
	return filepath.Join(podsDir, uid, volumeDevicesDir, PodPluginDir)
}

// SetUpBlock stages and publishes a volumeMode Block volume for the pod and
// returns the device path to give the container (a symlink to the device
// the driver published).
func (p *Plugin) SetUpBlock(ctx context.Context, r Request) (string, error) {
	const op = "MapVolume.SetUpDevice"
	vp, err := paramsOf(r)
	if err != nil || r.PV == nil {
		return "", &OpError{op, r.SpecName, errors.New("block volumes must be CSI PersistentVolumes")}
	}
	if p.cfg.Client == nil {
		return "", &OpError{op, r.SpecName, fmt.Errorf("%s: CSI volumes need the API server: the kubelet runs in standalone mode", PluginName)}
	}
	defer p.lock(vp.driver, vp.handle)()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	uid := string(r.Pod.UID)
	unique := UniqueVolumeName(vp.driver, vp.handle)
	drv, err := p.csiDriver(vp.driver)
	if err != nil {
		return "", &OpError{op, r.SpecName, err}
	}
	if p.addInUse(unique, uid) && p.cfg.InUseChanged != nil && AttachRequired(drv) {
		p.cfg.InUseChanged()
	}
	var publishContext map[string]string
	if AttachRequired(drv) {
		if publishContext, err = p.waitForAttach(ctx, vp, unique); err != nil {
			return "", &OpError{OpWaitForAttach, r.SpecName, err}
		}
	}
	node, err := p.cfg.Drivers.node(vp.driver)
	if err != nil {
		return "", &OpError{op, r.SpecName, fmt.Errorf("%s: blockMapper.SetUpDevice failed to get CSI client: %w", PluginName, err)}
	}
	c, err := caps(ctx, node)
	if err != nil {
		return "", &OpError{op, r.SpecName, err}
	}
	data := p.blockDataDir(r.SpecName)
	if err := os.MkdirAll(data, 0o750); err != nil {
		return "", &OpError{op, r.SpecName, err}
	}
	if err := writeVolData(data, volData{keySpecVolID: r.SpecName, keyVolumeHandle: vp.handle, keyDriverName: vp.driver,
		keyNodeName: p.cfg.NodeName, keyAttachmentID: AttachmentName(vp.handle, vp.driver, p.cfg.NodeName)}); err != nil {
		return "", &OpError{op, r.SpecName, err}
	}
	am := AccessMode(vp.accessMode, c[csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER])
	capability := Capability(true, "", nil, am, "")
	staging := ""
	if c[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		staging = p.blockStagingPath(r.SpecName)
		if err := os.MkdirAll(staging, 0o750); err != nil {
			return "", &OpError{op, r.SpecName, err}
		}
		secrets, err := p.secrets(ctx, vp.stageSecret)
		if err != nil {
			return "", &OpError{op, r.SpecName, err}
		}
		if _, err := node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: vp.handle, PublishContext: publishContext,
			StagingTargetPath: staging, VolumeCapability: capability, Secrets: secrets, VolumeContext: vp.attrs}); err != nil {
			return "", &OpError{op, r.SpecName, fmt.Errorf("%s: blockMapper.stageVolumeForBlock failed: rpc error: NodeStageVolume: %w", PluginName, err)}
		}
	}
	publish := p.blockPublishPath(r.SpecName, uid)
	if err := os.MkdirAll(filepath.Dir(publish), 0o750); err != nil {
		return "", &OpError{op, r.SpecName, err}
	}
	secrets, err := p.secrets(ctx, vp.pubSecret)
	if err != nil {
		return "", &OpError{"MapVolume.MapPodDevice", r.SpecName, err}
	}
	attrs := vp.attrs
	if drv != nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount {
		attrs = mergeContext(attrs, PodInfo(r.Pod, false))
	}
	if _, err := node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: vp.handle, PublishContext: publishContext,
		StagingTargetPath: staging, TargetPath: publish, VolumeCapability: capability, Readonly: vp.readOnly, Secrets: secrets, VolumeContext: attrs}); err != nil {
		return "", &OpError{"MapVolume.MapPodDevice", r.SpecName, fmt.Errorf("%s: blockMapper.publishVolumeForBlock failed: rpc error: NodePublishVolume: %w", PluginName, err)}
	}
	dir := PodDeviceDir(p.cfg.PodsDir, uid)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", &OpError{"MapVolume.MapPodDevice", r.SpecName, err}
	}
	link := filepath.Join(dir, EscapeQualifiedName(r.SpecName))
	if cur, err := os.Readlink(link); err != nil || cur != publish {
		os.Remove(link)
		if err := os.Symlink(publish, link); err != nil {
			return "", &OpError{"MapVolume.MapPodDevice", r.SpecName, err}
		}
	}
	klog.V(4).InfoS("Block volume mapped", "pod", klog.KObj(r.Pod), "volume", r.SpecName, "device", link)
	return link, nil
}

// blockVolumes lists the pod's mapped block volumes (spec names).
func blockVolumes(podsDir, uid string) ([]string, error) {
	entries, err := os.ReadDir(PodDeviceDir(podsDir, uid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}

// tearDownBlock unpublishes the pod's block volume and unstages it once no
// other pod maps it.
func (p *Plugin) tearDownBlock(ctx context.Context, uid, spec string) error {
	data, err := readVolData(p.blockDataDir(spec))
	if err != nil {
		// Never published by us: drop the mapping.
		os.Remove(filepath.Join(PodDeviceDir(p.cfg.PodsDir, uid), spec))
		return nil
	}
	driver, handle := data[keyDriverName], data[keyVolumeHandle]
	defer p.lock(driver, handle)()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	node, err := p.cfg.Drivers.node(driver)
	if err != nil {
		return &OpError{"UnmapVolume.UnmapPodDevice", spec, err}
	}
	publish := p.blockPublishPath(spec, uid)
	if _, err := node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: publish}); err != nil {
		return &OpError{"UnmapVolume.UnmapPodDevice", spec, fmt.Errorf("rpc error: NodeUnpublishVolume: %w", err)}
	}
	os.Remove(publish)
	os.Remove(filepath.Join(PodDeviceDir(p.cfg.PodsDir, uid), spec))
	p.removeInUse(UniqueVolumeName(driver, handle), uid)
	if p.blockMapped(spec) {
		return nil
	}
	c, err := caps(ctx, node)
	if err != nil {
		return &OpError{"UnmapVolume.TearDownDevice", spec, err}
	}
	staging := p.blockStagingPath(spec)
	if _, err := os.Stat(staging); err == nil && c[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		if _, err := node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: staging}); err != nil {
			return &OpError{"UnmapVolume.TearDownDevice", spec, fmt.Errorf("rpc error: NodeUnstageVolume: %w", err)}
		}
	}
	os.RemoveAll(staging)
	os.Remove(filepath.Dir(publish))
	os.RemoveAll(filepath.Dir(p.blockDataDir(spec)))
	klog.V(2).InfoS("Block volume unmapped and unstaged", "volume", spec, "driver", driver)
	return nil
}

// blockMapped reports whether any pod still maps the block volume.
func (p *Plugin) blockMapped(spec string) bool {
	entries, err := os.ReadDir(filepath.Dir(p.blockPublishPath(spec, "x")))
	return err == nil && len(entries) > 0
}

// BlockPublished returns the device of a pod's block volume mapped by an
// earlier kubelet process: its symlink points at a published device.
func BlockPublished(podsDir, uid, spec string) (string, bool) {
	link := filepath.Join(PodDeviceDir(podsDir, uid), EscapeQualifiedName(spec))
	target, err := os.Readlink(link)
	if err != nil {
		return "", false
	}
	ok, err := mountpoint.IsMountPoint(target)
	return link, err == nil && ok
}
