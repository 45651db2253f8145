package csi

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// ErrNoStats is returned for a driver without GET_VOLUME_STATS.
var ErrNoStats = errors.New("the CSI driver does not report volume stats")

// Usage is what NodeGetVolumeStats reports for a volume's filesystem; a
// negative value was not reported.
type Usage struct {
	CapacityBytes, AvailableBytes, UsedBytes int64
	Inodes, InodesFree, InodesUsed           int64
	// Abnormal and Message are the driver's volume condition, if any.
	Abnormal bool
	Message  string
}

// VolumeStats asks the driver for the usage of a pod's published volume.
func (p *Plugin) VolumeStats(ctx context.Context, uid, specName string) (Usage, error) {
	dir := PodVolumeDir(p.cfg.PodsDir, uid, specName)
	d, err := readVolData(dir)
	if err != nil {
		return Usage{}, err
	}
	node, err := p.cfg.Drivers.node(d[keyDriverName])
	if err != nil {
		return Usage{}, err
	}
	c, err := caps(ctx, node)
	if err != nil {
		return Usage{}, err
	}
	if !c[csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS] {
		return Usage{}, ErrNoStats
	}
	resp, err := node.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: d[keyVolumeHandle], VolumePath: filepath.Join(dir, podMount)})
	if err != nil {
		return Usage{}, fmt.Errorf("NodeGetVolumeStats of %s: %w", d[keyVolumeHandle], err)
	}
	u := Usage{CapacityBytes: -1, AvailableBytes: -1, UsedBytes: -1, Inodes: -1, InodesFree: -1, InodesUsed: -1}
	for _, e := range resp.GetUsage() {
		switch e.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			u.CapacityBytes, u.AvailableBytes, u.UsedBytes = e.GetTotal(), e.GetAvailable(), e.GetUsed()
		case csipb.VolumeUsage_INODES:
			u.Inodes, u.InodesFree, u.InodesUsed = e.GetTotal(), e.GetAvailable(), e.GetUsed()
		}
	}
	if vc := resp.GetVolumeCondition(); vc != nil {
		u.Abnormal, u.Message = vc.GetAbnormal(), vc.GetMessage()
	}
	return u, nil
}
