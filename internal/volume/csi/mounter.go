package csi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/volume/mountpoint"
)

// opTimeout bounds one CSI call, as upstream's csiTimeout.
const opTimeout = 2 * time.Minute

// Operation names used in FailedMount messages, as upstream's.
const (
	OpWaitForAttach = "MountVolume.WaitForAttach"
	OpMountDevice   = "MountVolume.MountDevice"
	OpSetUp         = "MountVolume.SetUp"
)

// OpError is a failed volume operation: Op names it as upstream's events
// do, Volume is the volume's spec name (the PV's name for a claim).
type OpError struct {
	Op, Volume string
	Err        error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("%s failed for volume %q : %v", e.Op, e.Volume, e.Err)
}
func (e *OpError) Unwrap() error { return e.Err }

// Operation returns the operation's name and the volume it failed for.
func (e *OpError) Operation() (string, string) { return e.Op, e.Volume }

// DriverLister reads CSIDriver objects (an informer's cache).
type DriverLister interface {
	// CSIDriver returns the driver's object, nil when there is none.
	CSIDriver(name string) (*storagev1.CSIDriver, error)
}

// TokenGetter hands out service account tokens for tokenRequests.
type TokenGetter interface {
	ServiceAccountToken(ctx context.Context, namespace, name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error)
}

// SecretGetter reads the secrets a volume names (nodeStageSecretRef,
// nodePublishSecretRef).
type SecretGetter interface {
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Config configures a Plugin.
type Config struct {
	RootDir, PodsDir string // required
	NodeName         string // required
	Drivers          *Drivers
	// Client reads VolumeAttachments; nil in standalone mode, where CSI
	// volumes cannot be set up (no CSIDriver, no claims).
	Client     kubeclient.Interface
	CSIDrivers DriverLister
	Tokens     TokenGetter
	Secrets    SecretGetter
	// Node returns the Node as last written to the API (volumesInUse,
	// volumesAttached); nil before registration.
	Node func() *v1.Node
	// InUseChanged asks for a node status update (a volume started or
	// stopped being in use).
	InUseChanged func()
}

// Plugin sets up and tears down CSI volumes.
type Plugin struct {
	cfg Config

	mu    sync.Mutex
	locks map[string]*sync.Mutex // by driver^handle
	// inUse holds the persistent volumes (unique name) that pods on the
	// node use or are setting up, with the pods.
	inUse map[string]map[string]bool
}

// New returns a Plugin. Volumes already published on disk (an earlier
// kubelet) are counted in use at once.
func New(cfg Config) *Plugin {
	p := &Plugin{cfg: cfg, locks: map[string]*sync.Mutex{}, inUse: map[string]map[string]bool{}}
	if entries, err := os.ReadDir(cfg.PodsDir); err == nil {
		for _, e := range entries {
			vols, _ := podVolumesOnDisk(cfg.PodsDir, e.Name())
			for _, v := range vols {
				if v.Driver != "" && !v.Ephemeral {
					p.addInUse(UniqueVolumeName(v.Driver, v.Handle), v.PodUID)
				}
			}
		}
	}
	return p
}

func (p *Plugin) lock(driver, handle string) func() {
	key := driver + volNameSep + handle
	p.mu.Lock()
	l, ok := p.locks[key]
	if !ok {
		l = &sync.Mutex{}
		p.locks[key] = l
	}
	p.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (p *Plugin) addInUse(name, uid string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse[name] == nil {
		p.inUse[name] = map[string]bool{}
	}
	added := !p.inUse[name][uid]
	p.inUse[name][uid] = true
	return added
}

func (p *Plugin) removeInUse(name, uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inUse[name], uid)
	if len(p.inUse[name]) == 0 {
		delete(p.inUse, name)
	}
}

// VolumesInUse lists the attachable volumes pods on the node use, as
// node.status.volumesInUse reports them (sorted).
func (p *Plugin) VolumesInUse() []v1.UniqueVolumeName {
	p.mu.Lock()
	names := make([]string, 0, len(p.inUse))
	for n := range p.inUse {
		names = append(names, n)
	}
	p.mu.Unlock()
	var out []v1.UniqueVolumeName
	for _, n := range names {
		driver, _, _ := splitUnique(n)
		if p.attachRequired(driver) {
			out = append(out, v1.UniqueVolumeName(n))
		}
	}
	sortUnique(out)
	return out
}

func (p *Plugin) attachRequired(driver string) bool {
	d, err := p.csiDriver(driver)
	if err != nil {
		return true
	}
	return AttachRequired(d)
}

func (p *Plugin) csiDriver(name string) (*storagev1.CSIDriver, error) {
	if p.cfg.CSIDrivers == nil {
		return nil, nil
	}
	return p.cfg.CSIDrivers.CSIDriver(name)
}

// RequiresRepublish reports whether the driver's CSIDriver asks for
// NodePublishVolume to be repeated periodically.
func (p *Plugin) RequiresRepublish(driver string) bool {
	d, err := p.csiDriver(driver)
	return err == nil && d != nil && d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish
}

// Request is one CSI volume of one pod to set up.
type Request struct {
	Pod *v1.Pod
	// SpecName is the PV's name, or the pod volume's for an inline volume.
	SpecName string
	// PV is set for a persistent volume (PV.Spec.CSI), Inline for a CSI
	// ephemeral inline volume.
	PV     *v1.PersistentVolume
	Inline *v1.CSIVolumeSource
	// ReadOnly is the claim's (or inline volume's) readOnly.
	ReadOnly bool
	FSGroup  *int64
}

// Result is a volume set up for a pod.
type Result struct {
	// Path is the published directory to mount into containers.
	Path string
	// ApplyFSGroup tells the caller to give the volume to the fsGroup.
	ApplyFSGroup bool
}

type volumeParams struct {
	driver, handle, fsType string
	ephemeral, readOnly    bool
	attrs                  map[string]string
	mountFlags             []string
	accessMode             v1.PersistentVolumeAccessMode
	stageSecret, pubSecret *v1.SecretReference
}

func paramsOf(r Request) (volumeParams, error) {
	switch {
	case r.PV != nil && r.PV.Spec.CSI != nil:
		src := r.PV.Spec.CSI
		vp := volumeParams{driver: src.Driver, handle: src.VolumeHandle, fsType: src.FSType, readOnly: r.ReadOnly,
			attrs: src.VolumeAttributes, mountFlags: r.PV.Spec.MountOptions, accessMode: v1.ReadWriteOnce,
			stageSecret: src.NodeStageSecretRef, pubSecret: src.NodePublishSecretRef}
		if len(r.PV.Spec.AccessModes) > 0 {
			vp.accessMode = r.PV.Spec.AccessModes[0]
		}
		return vp, nil
	case r.Inline != nil:
		src := r.Inline
		vp := volumeParams{driver: src.Driver, handle: EphemeralHandle(string(r.Pod.UID), r.SpecName), ephemeral: true,
			attrs: src.VolumeAttributes, accessMode: v1.ReadWriteOnce, readOnly: src.ReadOnly != nil && *src.ReadOnly}
		if src.FSType != nil {
			vp.fsType = *src.FSType
		}
		if src.NodePublishSecretRef != nil {
			vp.pubSecret = &v1.SecretReference{Name: src.NodePublishSecretRef.Name, Namespace: r.Pod.Namespace}
		}
		return vp, nil
	}
	return volumeParams{}, errors.New("volume source not found in volume.Spec")
}

// SetUp stages (when the driver has STAGE_UNSTAGE) and publishes the
// volume for the pod. Calling it again is safe: CSI calls are idempotent.
func (p *Plugin) SetUp(ctx context.Context, r Request) (Result, error) {
	vp, err := paramsOf(r)
	if err != nil {
		return Result{}, &OpError{OpSetUp, r.SpecName, err}
	}
	if p.cfg.Client == nil {
		return Result{}, &OpError{OpSetUp, r.SpecName, fmt.Errorf("%s: CSI volumes need the API server (CSIDriver, VolumeAttachment): the kubelet runs in standalone mode", PluginName)}
	}
	defer p.lock(vp.driver, vp.handle)()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	uid := string(r.Pod.UID)
	unique := UniqueVolumeName(vp.driver, vp.handle)

	drv, err := p.csiDriver(vp.driver)
	if err != nil {
		return Result{}, &OpError{OpSetUp, r.SpecName, fmt.Errorf("%s: mounter.SetUpAt failed to check the CSIDriver: %w", PluginName, err)}
	}
	mode := storagev1.VolumeLifecyclePersistent
	if vp.ephemeral {
		mode = storagev1.VolumeLifecycleEphemeral
	}
	if err := CheckLifecycleMode(vp.driver, drv, mode); err != nil {
		return Result{}, &OpError{OpSetUp, r.SpecName, fmt.Errorf("%s: mounter.SetupAt failed to check volume lifecycle mode: %w", PluginName, err)}
	}

	var publishContext map[string]string
	stagingPath := ""
	if !vp.ephemeral {
		if p.addInUse(unique, uid) && p.cfg.InUseChanged != nil && AttachRequired(drv) {
			p.cfg.InUseChanged()
		}
		if AttachRequired(drv) {
			if publishContext, err = p.waitForAttach(ctx, vp, unique); err != nil {
				return Result{}, &OpError{OpWaitForAttach, r.SpecName, err}
			}
		}
		node, err := p.cfg.Drivers.node(vp.driver)
		if err != nil {
			return Result{}, &OpError{OpMountDevice, r.SpecName, fmt.Errorf("%s: attacher.MountDevice failed to create newCsiDriverClient: %w", PluginName, err)}
		}
		if stagingPath, err = p.stage(ctx, node, vp, publishContext, r.FSGroup); err != nil {
			return Result{}, &OpError{OpMountDevice, r.SpecName, err}
		}
	}
	node, err := p.cfg.Drivers.node(vp.driver)
	if err != nil {
		return Result{}, &OpError{OpSetUp, r.SpecName, fmt.Errorf("%s: mounter.SetUpAt failed to get CSI client: %w", PluginName, err)}
	}
	res, err := p.publish(ctx, node, r, vp, drv, publishContext, stagingPath)
	if err != nil {
		return Result{}, &OpError{OpSetUp, r.SpecName, err}
	}
	return res, nil
}

// waitForAttach checks, as upstream's VerifyControllerAttachedVolume and
// WaitForAttach do, that the node status reports the volume in use and
// attached and that its VolumeAttachment is attached; it returns the
// attachment's publish context.
func (p *Plugin) waitForAttach(ctx context.Context, vp volumeParams, unique string) (map[string]string, error) {
	var node *v1.Node
	if p.cfg.Node != nil {
		node = p.cfg.Node()
	}
	if node == nil || !containsUnique(node.Status.VolumesInUse, unique) {
		return nil, fmt.Errorf("volume %q has not been added to the list of VolumesInUse in the node's volume status", unique)
	}
	attached := false
	for _, a := range node.Status.VolumesAttached {
		attached = attached || string(a.Name) == unique
	}
	if !attached {
		return nil, fmt.Errorf("volume %q is not attached according to node status", unique)
	}
	name := AttachmentName(vp.handle, vp.driver, p.cfg.NodeName)
	va, err := p.cfg.Client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("volume %v has GET error for volume attachment %v: %w", vp.handle, name, err)
	}
	if !va.Status.Attached {
		if e := va.Status.AttachError; e != nil {
			return nil, fmt.Errorf("attachment for %v failed: %v", vp.handle, e.Message)
		}
		return nil, fmt.Errorf("volume %v is not attached for volume attachment %v", vp.handle, name)
	}
	return va.Status.AttachmentMetadata, nil
}

// caps returns the driver's node capabilities.
func caps(ctx context.Context, node csipb.NodeClient) (map[csipb.NodeServiceCapability_RPC_Type]bool, error) {
	resp, err := node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, err
	}
	out := map[csipb.NodeServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		if rpc := c.GetRpc(); rpc != nil {
			out[rpc.GetType()] = true
		}
	}
	return out, nil
}

func (p *Plugin) secrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	out := map[string]string{}
	if ref == nil {
		return out, nil
	}
	if p.cfg.Secrets == nil {
		return nil, fmt.Errorf("secret %s/%s: no API server", ref.Namespace, ref.Name)
	}
	s, err := p.cfg.Secrets.Secret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

func mountGroup(fsGroup *int64, driverApplies bool) string {
	if fsGroup == nil || !driverApplies {
		return ""
	}
	return strconv.FormatInt(*fsGroup, 10)
}

// stage runs NodeStageVolume into the global mount when the driver has
// STAGE_UNSTAGE and returns the staging path ("" when it has not).
func (p *Plugin) stage(ctx context.Context, node csipb.NodeClient, vp volumeParams, publishContext map[string]string, fsGroup *int64) (string, error) {
	c, err := caps(ctx, node)
	if err != nil {
		return "", fmt.Errorf("%s: attacher.MountDevice failed to get node capabilities: %w", PluginName, err)
	}
	dir := GlobalDir(p.cfg.RootDir, vp.driver, vp.handle)
	target := filepath.Join(dir, globalMount)
	// The data file is kept even without staging: unstaging needs it.
	if err := os.MkdirAll(target, 0o750); err != nil {
		return "", fmt.Errorf("%s: attacher.MountDevice failed to create dir %q: %w", PluginName, target, err)
	}
	if err := writeVolData(dir, volData{keyVolumeHandle: vp.handle, keyDriverName: vp.driver}); err != nil {
		return "", fmt.Errorf("%s: failed to save volume info data: %w", PluginName, err)
	}
	if !c[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		return "", nil
	}
	secrets, err := p.secrets(ctx, vp.stageSecret)
	if err != nil {
		return "", fmt.Errorf("fetching NodeStageSecretRef %s/%s failed: %w", vp.stageSecret.Namespace, vp.stageSecret.Name, err)
	}
	am := AccessMode(vp.accessMode, c[csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER])
	_, err = node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
		VolumeId: vp.handle, PublishContext: publishContext, StagingTargetPath: target,
		VolumeCapability: Capability(false, vp.fsType, vp.mountFlags, am, mountGroup(fsGroup, c[csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP])),
		Secrets:          secrets, VolumeContext: vp.attrs,
	})
	if err != nil {
		if isFinal(err) {
			removeMountDir(target)
		}
		return "", fmt.Errorf("rpc error: NodeStageVolume: %w", err)
	}
	klog.V(4).InfoS("NodeStageVolume succeeded", "driver", vp.driver, "volumeHandle", vp.handle, "path", target)
	return target, nil
}

func (p *Plugin) publish(ctx context.Context, node csipb.NodeClient, r Request, vp volumeParams, drv *storagev1.CSIDriver, publishContext map[string]string, stagingPath string) (Result, error) {
	c, err := caps(ctx, node)
	if err != nil {
		return Result{}, fmt.Errorf("%s: mounter.SetUpAt failed to get node capabilities: %w", PluginName, err)
	}
	uid := string(r.Pod.UID)
	dir := PodVolumeDir(p.cfg.PodsDir, uid, r.SpecName)
	target := filepath.Join(dir, podMount)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Result{}, fmt.Errorf("%s: mounter.SetUpAt failed to create dir %q: %w", PluginName, dir, err)
	}
	secrets, err := p.secrets(ctx, vp.pubSecret)
	if err != nil {
		return Result{}, fmt.Errorf("fetching NodePublishSecretRef %s/%s failed: %w", vp.pubSecret.Namespace, vp.pubSecret.Name, err)
	}
	attrs := vp.attrs
	if drv != nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount {
		attrs = mergeContext(attrs, PodInfo(r.Pod, vp.ephemeral))
	}
	if drv != nil && len(drv.Spec.TokenRequests) > 0 {
		tokens, err := p.tokens(ctx, r.Pod, drv)
		if err != nil {
			return Result{}, fmt.Errorf("%s: mounter.SetUpAt failed to get service accoount token attributes: %w", PluginName, err)
		}
		if drv.Spec.ServiceAccountTokenInSecrets != nil && *drv.Spec.ServiceAccountTokenInSecrets {
			secrets = mergeContext(secrets, map[string]string{ctxTokens: tokens})
		} else {
			attrs = mergeContext(attrs, map[string]string{ctxTokens: tokens})
		}
	}
	mode := lifecyclePersist
	if vp.ephemeral {
		mode = lifecycleEphemera
	}
	if err := writeVolData(dir, volData{
		keySpecVolID: r.SpecName, keyVolumeHandle: vp.handle, keyDriverName: vp.driver, keyNodeName: p.cfg.NodeName,
		keyLifecycleMode: mode, keyAttachmentID: AttachmentName(vp.handle, vp.driver, p.cfg.NodeName),
	}); err != nil {
		return Result{}, fmt.Errorf("%s: mounter.SetUpAt failed to save volume info data: %w", PluginName, err)
	}
	driverMountGroup := c[csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP]
	am := AccessMode(vp.accessMode, c[csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER])
	_, err = node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId: vp.handle, PublishContext: publishContext, StagingTargetPath: stagingPath, TargetPath: target,
		VolumeCapability: Capability(false, vp.fsType, vp.mountFlags, am, mountGroup(r.FSGroup, driverMountGroup)),
		Readonly:         vp.readOnly, Secrets: secrets, VolumeContext: attrs,
	})
	if err != nil {
		if isFinal(err) {
			removeMountDir(target)
		}
		return Result{}, fmt.Errorf("rpc error: NodePublishVolume: %w", err)
	}
	klog.V(4).InfoS("NodePublishVolume succeeded", "pod", klog.KObj(r.Pod), "driver", vp.driver, "volumeHandle", vp.handle, "path", target)
	return Result{Path: target, ApplyFSGroup: KubeletAppliesFSGroup(r.FSGroup, vp.readOnly, FSGroupPolicy(drv), driverMountGroup, vp.fsType, r.PV)}, nil
}

// tokens requests a token per tokenRequests audience and returns them as
// upstream's JSON map audience → {token, expirationTimestamp}.
func (p *Plugin) tokens(ctx context.Context, pod *v1.Pod, drv *storagev1.CSIDriver) (string, error) {
	if p.cfg.Tokens == nil {
		return "", errors.New("ServiceAccountTokenGetter is nil")
	}
	out := map[string]authenticationv1.TokenRequestStatus{}
	for _, tr := range drv.Spec.TokenRequests {
		spec := authenticationv1.TokenRequestSpec{
			ExpirationSeconds: tr.ExpirationSeconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		}
		if tr.Audience != "" {
			spec.Audiences = []string{tr.Audience}
		}
		got, err := p.cfg.Tokens.ServiceAccountToken(ctx, pod.Namespace, pod.Spec.ServiceAccountName, spec)
		if err != nil {
			return "", err
		}
		out[tr.Audience] = got.Status
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// isFinal reports whether a failed CSI call is known not to have left
// anything behind; timeouts and an unreachable driver are uncertain, as
// upstream's IsOperationFinishedError.
func isFinal(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// removeMountDir removes a mount target that is no longer mounted, with
// the vol_data.json and directory beside it. A target still mounted is an
// error: the kubelet never unmounts what a driver mounted.
func removeMountDir(target string) error {
	mounted, err := mountpoint.IsMountPoint(target)
	if err != nil {
		return err
	}
	if mounted {
		return fmt.Errorf("%s is still mounted", target)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to remove dir [%s]: %w", target, err)
	}
	dir := filepath.Dir(target)
	if err := os.Remove(filepath.Join(dir, dataFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to delete volume data file [%s]: %w", filepath.Join(dir, dataFileName), err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to delete volume path [%s]: %w", dir, err)
	}
	return nil
}
