package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TopologyKey is the node topology segment the driver reports.
const TopologyKey = "topology.hostpath.csi.seed.test/node"

// driver is a CSI driver that keeps each volume as a directory (or, for
// block volumes, a file attached to a loop device) under its data
// directory, stages it by bind-mounting it to the staging path and
// publishes it by bind-mounting the staging path (or the directory, for
// ephemeral volumes) to the target. Everything it knows is on disk and in
// the mount table, so it can be killed and restarted at any time.
type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	name, nodeID, dataDir string
	maxVolumes            int64
	attach                bool
	// crashPublish and failPublish are fault injection files: when the
	// first exists NodePublishVolume mounts the target and the process dies
	// before answering; when the second exists it fails with Internal.
	crashPublish, failPublish string
	mountGroup                bool
	// noTopology: the volumes are reachable from every node (one machine).
	noTopology bool

	mu sync.Mutex
}

func runDriver(args []string) error {
	fl := flag.NewFlagSet("driver", flag.ExitOnError)
	d := &driver{}
	endpoint := fl.String("endpoint", "", "socket path to serve CSI on")
	fl.StringVar(&d.name, "drivername", "hostpath.csi.seed.test", "driver name")
	fl.StringVar(&d.nodeID, "nodeid", "", "node ID (the Kubernetes node name)")
	fl.StringVar(&d.dataDir, "datadir", "", "directory holding the volumes")
	fl.Int64Var(&d.maxVolumes, "max-volumes", 0, "max_volumes_per_node reported by NodeGetInfo (0: none)")
	fl.BoolVar(&d.attach, "attach", false, "volumes need ControllerPublishVolume (PUBLISH_UNPUBLISH_VOLUME)")
	fl.StringVar(&d.crashPublish, "crash-publish-if", "", "die in NodePublishVolume, after mounting, while this file exists")
	fl.StringVar(&d.failPublish, "fail-publish-if", "", "fail NodePublishVolume while this file exists")
	fl.BoolVar(&d.mountGroup, "volume-mount-group", false, "report VOLUME_MOUNT_GROUP and apply fsGroup itself")
	fl.BoolVar(&d.noTopology, "no-topology", false, "report no topology: every node of this machine reaches every volume")
	fl.Parse(args)
	if *endpoint == "" || d.nodeID == "" || d.dataDir == "" {
		return errors.New("--endpoint, --nodeid and --datadir are required")
	}
	for _, dir := range []string{d.volumesDir(), d.ephemeralDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	os.Remove(*endpoint)
	if err := os.MkdirAll(filepath.Dir(*endpoint), 0o755); err != nil {
		return err
	}
	l, err := net.Listen("unix", *endpoint)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	log.Printf("driver %s for node %s serving on %s (data %s)", d.name, d.nodeID, *endpoint, d.dataDir)
	stopOnSignal(func() { srv.Stop(); os.Remove(*endpoint) })
	return srv.Serve(l)
}

func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s %s: error %v", info.FullMethod, protosanitizer.StripSecrets(req), err)
	} else {
		log.Printf("%s %s: ok", info.FullMethod, protosanitizer.StripSecrets(req))
	}
	return resp, err
}

func (d *driver) volumesDir() string   { return filepath.Join(d.dataDir, "volumes") }
func (d *driver) ephemeralDir() string { return filepath.Join(d.dataDir, "ephemeral") }

// volumeID is derived from the CreateVolume name, so a repeated call
// answers with the same volume.
func volumeID(name string) string { return fmt.Sprintf("vol-%x", sha256.Sum256([]byte(name)))[:20] }

func (d *driver) volumePath(id string) string { return filepath.Join(d.volumesDir(), id) }
func (d *driver) blockPath(id string) string  { return filepath.Join(d.volumesDir(), id+".img") }

// Identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: "0.1.0"}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
		{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS}}},
	}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Controller

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	types := []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	if d.attach {
		types = append(types, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	}
	var out []*csi.ControllerServiceCapability
	for _, t := range types {
		out = append(out, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: out}, nil
}

func isBlock(caps []*csi.VolumeCapability) bool {
	for _, c := range caps {
		if c.GetBlock() != nil {
			return true
		}
	}
	return false
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name missing")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := volumeID(req.GetName())
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = 1 << 20
	}
	if isBlock(req.GetVolumeCapabilities()) {
		f, err := os.OpenFile(d.blockPath(id), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		err = f.Truncate(size)
		f.Close()
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	} else if err := os.MkdirAll(d.volumePath(id), 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	vol := &csi.Volume{VolumeId: id, CapacityBytes: size}
	if !d.noTopology {
		vol.AccessibleTopology = []*csi.Topology{{Segments: map[string]string{TopologyKey: d.nodeID}}}
	}
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := req.GetVolumeId()
	if strings.Contains(id, "/") || id == "" {
		return nil, status.Error(codes.InvalidArgument, "bad volume id")
	}
	os.RemoveAll(d.volumePath(id))
	os.Remove(d.blockPath(id))
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if !d.attach {
		return nil, status.Error(codes.Unimplemented, "no attach")
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{"attachedTo": req.GetNodeId()}}, nil
}

func (d *driver) ControllerUnpublishVolume(context.Context, *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

// Node

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	info := &csi.NodeGetInfoResponse{NodeId: d.nodeID, MaxVolumesPerNode: d.maxVolumes}
	if !d.noTopology {
		info.AccessibleTopology = &csi.Topology{Segments: map[string]string{TopologyKey: d.nodeID}}
	}
	return info, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	types := []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	}
	if d.mountGroup {
		types = append(types, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}
	var out []*csi.NodeServiceCapability
	for _, t := range types {
		out = append(out, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: out}, nil
}

func checkPath(p string) error {
	if p == "" || !filepath.IsAbs(p) {
		return status.Errorf(codes.InvalidArgument, "path %q must be absolute", p)
	}
	return nil
}

func (d *driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetStagingTargetPath()
	if err := checkPath(target); err != nil {
		return nil, err
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	}
	if d.attach && req.GetPublishContext()["attachedTo"] != d.nodeID {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to %s (publish context %v)", id, d.nodeID, req.GetPublishContext())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.GetVolumeCapability().GetBlock() != nil {
		// The loop device is attached at publish time; staging only checks.
		if _, err := os.Stat(d.blockPath(id)); err != nil {
			return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	src := d.volumePath(id)
	if _, err := os.Stat(src); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted(target) {
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s to %s: %v", src, target, err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	target := req.GetStagingTargetPath()
	if err := checkPath(target); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if mounted(target) {
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	// Detach a block volume's loop device once nothing publishes it.
	if lo := loopDevice(d.blockPath(req.GetVolumeId())); lo != "" {
		exec.Command("losetup", "-d", lo).Run()
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if err := checkPath(target); err != nil {
		return nil, err
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	}
	if exists(d.failPublish) {
		return nil, status.Errorf(codes.Internal, "injected failure (%s exists)", d.failPublish)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.GetVolumeCapability().GetBlock() != nil {
		return d.publishBlock(req)
	}
	ephemeral := req.GetVolumeContext()["csi.storage.k8s.io/ephemeral"] == "true" || req.GetStagingTargetPath() == ""
	src := req.GetStagingTargetPath()
	if ephemeral {
		src = filepath.Join(d.ephemeralDir(), id)
		if err := os.MkdirAll(src, 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		// What the kubelet told the volume (pod info, tokens) is there to see.
		var b strings.Builder
		for k, v := range req.GetVolumeContext() {
			if !strings.Contains(k, "serviceAccount.tokens") {
				fmt.Fprintf(&b, "%s=%s\n", k, v)
			}
		}
		os.WriteFile(filepath.Join(src, "volume-context"), []byte(b.String()), 0o644)
	} else if !mounted(src) {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %q", id, src)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if !mounted(target) {
		if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
			return nil, status.Errorf(codes.Internal, "bind %s to %s: %v", src, target, err)
		}
		if req.GetReadonly() {
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				unix.Unmount(target, 0)
				return nil, status.Errorf(codes.Internal, "remount %s read-only: %v", target, err)
			}
		}
	}
	if g := req.GetVolumeCapability().GetMount().GetVolumeMountGroup(); g != "" && d.mountGroup {
		var gid int
		fmt.Sscan(g, &gid)
		os.Chown(target, -1, gid)
	}
	if exists(d.crashPublish) {
		log.Printf("crashing in NodePublishVolume of %s (%s exists)", id, d.crashPublish)
		os.Exit(3)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishBlock attaches the volume's file to a loop device (once) and
// bind-mounts the device node onto the target file.
func (d *driver) publishBlock(req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	img, target := d.blockPath(req.GetVolumeId()), req.GetTargetPath()
	lo := loopDevice(img)
	if lo == "" {
		out, err := exec.Command("losetup", "-f", "--show", img).Output()
		if err != nil {
			return nil, status.Errorf(codes.Internal, "losetup %s: %v", img, err)
		}
		lo = strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if f, err := os.OpenFile(target, os.O_CREATE, 0o660); err == nil {
		f.Close()
	}
	if !mounted(target) {
		if err := unix.Mount(lo, target, "", unix.MS_BIND, ""); err != nil {
			return nil, status.Errorf(codes.Internal, "bind %s to %s: %v", lo, target, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if err := checkPath(target); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for mounted(target) {
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	// An ephemeral volume lives as long as its one publication.
	if id := req.GetVolumeId(); strings.HasPrefix(id, "csi-") && !strings.Contains(id, "/") {
		os.RemoveAll(filepath.Join(d.ephemeralDir(), id))
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (d *driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	p := req.GetVolumePath()
	if err := checkPath(p); err != nil {
		return nil, err
	}
	if !mounted(p) {
		return nil, status.Errorf(codes.NotFound, "%s is not published", p)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	used, inodes := usage(p)
	bs := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: used},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: inodes},
	}}, nil
}

// usage is the bytes allocated below p and the number of entries.
func usage(p string) (int64, int64) {
	var bytes, inodes int64
	filepath.WalkDir(p, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil {
			bytes += st.Blocks * 512
			inodes++
		}
		return nil
	})
	return bytes, inodes
}

func exists(p string) bool {
	if p == "" {
		return false
	}
	_, err := os.Stat(p)
	return err == nil
}

// mounted reports whether p is a mount point (from the mount table: a bind
// mount on the same filesystem has the same device as its parent).
func mounted(p string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	p = filepath.Clean(p)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.ReplaceAll(f[4], `\040`, " ") == p {
			return true
		}
	}
	return false
}

// loopDevice returns the loop device backed by file, "" when none.
func loopDevice(file string) string {
	out, err := exec.Command("losetup", "-j", file).Output()
	if err != nil {
		return ""
	}
	dev, _, _ := strings.Cut(string(out), ":")
	return strings.TrimSpace(dev)
}
