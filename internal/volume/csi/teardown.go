package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"
)

// TearDownPod unpublishes every CSI volume found under the pod's directory
// and unstages the volumes no other pod publishes. It reads only the disk
// (vol_data.json) and the registered drivers, so it also cleans up after a
// pod deleted while the kubelet was down. Errors (a driver not registered
// yet, a failing call) leave the rest in place for the next try.
func (p *Plugin) TearDownPod(ctx context.Context, uid string) error {
	vols, err := podVolumesOnDisk(p.cfg.PodsDir, uid)
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vols {
		if err := p.tearDownVolume(ctx, v); err != nil {
			errs = append(errs, err)
		}
	}
	blocks, err := blockVolumes(p.cfg.PodsDir, uid)
	if err != nil {
		errs = append(errs, err)
	}
	for _, spec := range blocks {
		if err := p.tearDownBlock(ctx, uid, spec); err != nil {
			errs = append(errs, err)
		}
	}
	// Staged for this pod but never published (a publish that failed).
	p.mu.Lock()
	var staged []string
	for name, pods := range p.inUse {
		if pods[uid] {
			staged = append(staged, name)
		}
	}
	p.mu.Unlock()
	for _, name := range staged {
		driver, handle, _ := splitUnique(name)
		if err := p.unstageIfUnused(ctx, driver, handle); err != nil {
			errs = append(errs, err)
			continue
		}
		p.removeInUse(name, uid)
	}
	return errors.Join(errs...)
}

// HasVolumes reports whether the pod still has CSI volumes on disk.
func (p *Plugin) HasVolumes(uid string) bool {
	vols, err := podVolumesOnDisk(p.cfg.PodsDir, uid)
	blocks, berr := blockVolumes(p.cfg.PodsDir, uid)
	return err != nil || berr != nil || len(vols) > 0 || len(blocks) > 0
}

func (p *Plugin) tearDownVolume(ctx context.Context, v PodVolume) error {
	if v.Driver == "" {
		// Nothing was published here (no vol_data.json): remove what is
		// left unless something is mounted.
		if err := removeMountDir(v.Target); err != nil {
			return fmt.Errorf("volume %q of pod %s: %w", v.SpecName, v.PodUID, err)
		}
		return nil
	}
	unlock := p.lock(v.Driver, v.Handle)
	err := p.unpublish(ctx, v)
	unlock()
	if err != nil {
		return &OpError{"UnmountVolume.TearDown", v.SpecName, err}
	}
	klog.V(2).InfoS("UnmountVolume.TearDown succeeded", "podUID", v.PodUID, "volume", v.SpecName, "driver", v.Driver, "volumeHandle", v.Handle)
	if v.Ephemeral {
		return nil
	}
	if err := p.unstageIfUnused(ctx, v.Driver, v.Handle); err != nil {
		return err
	}
	p.removeInUse(UniqueVolumeName(v.Driver, v.Handle), v.PodUID)
	return nil
}

func (p *Plugin) unpublish(ctx context.Context, v PodVolume) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	node, err := p.cfg.Drivers.node(v.Driver)
	if err != nil {
		return fmt.Errorf("%s: Unmounter.TearDownAt failed to get CSI client: %w", PluginName, err)
	}
	if _, err := node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: v.Target}); err != nil {
		return fmt.Errorf("%s: Unmounter.TearDownAt failed: rpc error: NodeUnpublishVolume: %w", PluginName, err)
	}
	if err := removeMountDir(v.Target); err != nil {
		return fmt.Errorf("%s: Unmounter.TearDownAt failed to clean mount dir [%s]: %w", PluginName, v.Target, err)
	}
	return nil
}

// referenced reports whether a pod volume on disk publishes the volume.
func (p *Plugin) referenced(driver, handle string) bool {
	entries, err := os.ReadDir(p.cfg.PodsDir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) // unsure: keep it staged
	}
	for _, e := range entries {
		vols, err := podVolumesOnDisk(p.cfg.PodsDir, e.Name())
		if err != nil {
			return true
		}
		for _, v := range vols {
			if v.Driver == driver && v.Handle == handle && !v.Ephemeral {
				return true
			}
		}
	}
	return false
}

// unstageIfUnused runs NodeUnstageVolume for a staged volume no pod
// publishes any more, and removes its global directory.
func (p *Plugin) unstageIfUnused(ctx context.Context, driver, handle string) error {
	defer p.lock(driver, handle)()
	dir := GlobalDir(p.cfg.RootDir, driver, handle)
	if _, err := readVolData(dir); err != nil {
		return nil // not staged by us
	}
	if p.referenced(driver, handle) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	node, err := p.cfg.Drivers.node(driver)
	if err != nil {
		return &OpError{"UnmountDevice", handle, fmt.Errorf("%s: attacher.UnmountDevice failed to create newCsiDriverClient: %w", PluginName, err)}
	}
	c, err := caps(ctx, node)
	if err != nil {
		return &OpError{"UnmountDevice", handle, fmt.Errorf("%s: attacher.UnmountDevice failed to get node capabilities: %w", PluginName, err)}
	}
	target := filepath.Join(dir, globalMount)
	if c[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		if _, err := node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: target}); err != nil {
			return &OpError{"UnmountDevice", handle, fmt.Errorf("%s: attacher.UnmountDevice failed: rpc error: NodeUnstageVolume: %w", PluginName, err)}
		}
	}
	if err := removeMountDir(target); err != nil {
		return &OpError{"UnmountDevice", handle, fmt.Errorf("%s: failed to clean up global mount %s: %w", PluginName, dir, err)}
	}
	// The per-driver directory goes once its last volume has.
	os.Remove(filepath.Dir(dir))
	klog.V(2).InfoS("UnmountDevice succeeded", "driver", driver, "volumeHandle", handle, "path", target)
	return nil
}

// CleanupOrphans tears down the CSI volumes of pod directories whose UID
// is not in keep (pods deleted while the kubelet was down, or whose
// teardown failed before) and unstages global mounts no pod publishes.
func (p *Plugin) CleanupOrphans(ctx context.Context, keep map[string]bool) error {
	var errs []error
	if entries, err := os.ReadDir(p.cfg.PodsDir); err == nil {
		for _, e := range entries {
			if keep[e.Name()] {
				continue
			}
			if !p.HasVolumes(e.Name()) {
				continue
			}
			klog.V(2).InfoS("Tearing down the CSI volumes of an orphaned pod", "podUID", e.Name())
			if err := p.TearDownPod(ctx, e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, g := range globalVolumesOnDisk(p.cfg.RootDir) {
		if p.referenced(g.Driver, g.Handle) || p.settingUp(g.Driver, g.Handle) {
			continue
		}
		if err := p.unstageIfUnused(ctx, g.Driver, g.Handle); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settingUp reports whether a pod that is still wanted counts the volume
// in use (it may be between staging and publishing).
func (p *Plugin) settingUp(driver, handle string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inUse[UniqueVolumeName(driver, handle)]) > 0
}

func splitUnique(name string) (driver, handle string, ok bool) {
	rest, ok := strings.CutPrefix(name, PluginName+"/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, volNameSep)
}
