package csi

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

// nodeServer is a CSI Node service that records its calls and creates the
// targets it is asked to publish (without mounting anything).
type nodeServer struct {
	csipb.UnimplementedNodeServer
	caps []csipb.NodeServiceCapability_RPC_Type
	mu   sync.Mutex
	// calls are "Method volumeID"; requests keeps the last of each kind.
	calls      []string
	stage      *csipb.NodeStageVolumeRequest
	publish    *csipb.NodePublishVolumeRequest
	publishErr error
}

func (s *nodeServer) record(call string) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
}

func (s *nodeServer) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: "n1"}, nil
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	var out []*csipb.NodeServiceCapability
	for _, t := range s.caps {
		out = append(out, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: out}, nil
}

func (s *nodeServer) NodeStageVolume(_ context.Context, r *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	s.record("NodeStageVolume " + r.VolumeId)
	s.mu.Lock()
	s.stage = r
	s.mu.Unlock()
	return &csipb.NodeStageVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, r *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	s.record("NodeUnstageVolume " + r.VolumeId)
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

func (s *nodeServer) NodePublishVolume(_ context.Context, r *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	s.record("NodePublishVolume " + r.VolumeId)
	s.mu.Lock()
	s.publish = r
	err := s.publishErr
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &csipb.NodePublishVolumeResponse{}, os.MkdirAll(r.TargetPath, 0o750)
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, r *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	s.record("NodeUnpublishVolume " + r.VolumeId)
	return &csipb.NodeUnpublishVolumeResponse{}, os.RemoveAll(r.TargetPath)
}

func (s *nodeServer) takeCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

type drivers map[string]*storagev1.CSIDriver

func (d drivers) CSIDriver(name string) (*storagev1.CSIDriver, error) { return d[name], nil }

type tokens struct{}

func (tokens) ServiceAccountToken(_ context.Context, ns, name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	return &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "token-for-" + ns + "/" + name + "@" + strings.Join(spec.Audiences, ",")}}, nil
}

type env struct {
	root, pods string
	srv        *nodeServer
	reg        *Registrar
	cfg        Config
	cs         *fake.Clientset
}

const driverName = "hostpath.csi.test"

func newEnv(t *testing.T, caps ...csipb.NodeServiceCapability_RPC_Type) *env {
	t.Helper()
	root := t.TempDir()
	srv := &nodeServer{caps: caps}
	sock := filepath.Join(root, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	csipb.RegisterNodeServer(g, srv)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	reg := &Registrar{Drivers: NewDrivers()}
	if err := reg.RegisterPlugin(driverName, sock, []string{"1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewSimpleClientset()
	e := &env{root: root, pods: filepath.Join(root, "pods"), srv: srv, reg: reg, cs: cs}
	e.cfg = Config{RootDir: root, PodsDir: e.pods, NodeName: "n1", Drivers: reg.Drivers, Client: kubeclienttest.Wrap(cs),
		CSIDrivers: drivers{driverName: {Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}}},
		Tokens: tokens{}}
	return e
}

func testPV(handle string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + handle}, Spec: v1.PersistentVolumeSpec{
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: handle, VolumeAttributes: map[string]string{"k": "v"}}},
	}}
}

func testPod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID("uid-" + uid)}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
}

func readData(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "vol_data.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func equalCalls(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

func TestStagePublishAndTearDown(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	p := New(e.cfg)
	ctx := context.Background()
	pv := testPV("h1")
	a, b := testPod("a"), testPod("b")
	res, err := p.SetUp(ctx, Request{Pod: a, SpecName: pv.Name, PV: pv})
	if err != nil {
		t.Fatal(err)
	}
	if want := PodMountPath(e.pods, "uid-a", pv.Name); res.Path != want {
		t.Fatalf("path %s, want %s", res.Path, want)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeStageVolume h1", "NodePublishVolume h1")
	global := GlobalMountPath(e.root, driverName, "h1")
	if e.srv.stage.StagingTargetPath != global || e.srv.publish.StagingTargetPath != global || e.srv.publish.TargetPath != res.Path {
		t.Fatalf("stage %s, publish %s → %s", e.srv.stage.StagingTargetPath, e.srv.publish.StagingTargetPath, e.srv.publish.TargetPath)
	}
	if m := e.srv.stage.VolumeCapability.GetAccessMode().GetMode(); m != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
		t.Errorf("access mode %v", m)
	}
	ctxAttrs := e.srv.publish.VolumeContext
	if ctxAttrs["k"] != "v" || ctxAttrs[ctxPodName] != "p-a" || ctxAttrs[ctxPodUID] != "uid-a" || ctxAttrs[ctxEphemeral] != "false" || ctxAttrs[ctxServiceAccount] != "sa" {
		t.Errorf("volume context %v", ctxAttrs)
	}
	if d := readData(t, filepath.Dir(res.Path)); d[keyDriverName] != driverName || d[keyVolumeHandle] != "h1" || d[keySpecVolID] != pv.Name ||
		d[keyLifecycleMode] != lifecyclePersist || d[keyAttachmentID] != AttachmentName("h1", driverName, "n1") || d[keyNodeName] != "n1" {
		t.Errorf("pod vol_data.json %v", d)
	}
	if d := readData(t, filepath.Dir(global)); d[keyDriverName] != driverName || d[keyVolumeHandle] != "h1" || len(d) != 2 {
		t.Errorf("global vol_data.json %v", d)
	}
	if _, err := p.SetUp(ctx, Request{Pod: b, SpecName: pv.Name, PV: pv, ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if !e.srv.publish.Readonly {
		t.Error("read-only claim published read-write")
	}
	e.srv.takeCalls()

	// The first pod goes: unpublished, still staged for the second.
	if err := p.TearDownPod(ctx, "uid-a"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h1")
	if _, err := os.Stat(filepath.Dir(res.Path)); !os.IsNotExist(err) {
		t.Errorf("pod volume dir left: %v", err)
	}
	// A kubelet restarted now knows from disk that the second pod uses it.
	p = New(e.cfg)
	if err := p.TearDownPod(ctx, "uid-b"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h1", "NodeUnstageVolume h1")
	if _, err := os.Stat(filepath.Dir(global)); !os.IsNotExist(err) {
		t.Errorf("global dir left: %v", err)
	}
}

func TestWithoutStageUnstage(t *testing.T) {
	e := newEnv(t)
	p := New(e.cfg)
	ctx := context.Background()
	pv := testPV("h2")
	if _, err := p.SetUp(ctx, Request{Pod: testPod("a"), SpecName: pv.Name, PV: pv}); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodePublishVolume h2")
	if e.srv.publish.StagingTargetPath != "" {
		t.Errorf("staging path %q for a driver without STAGE_UNSTAGE", e.srv.publish.StagingTargetPath)
	}
	if err := p.TearDownPod(ctx, "uid-a"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h2")
	if _, err := os.Stat(GlobalDir(e.root, driverName, "h2")); !os.IsNotExist(err) {
		t.Errorf("global dir left: %v", err)
	}
}

func TestInlineEphemeralVolume(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.cfg.CSIDrivers.(drivers)[driverName].Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
	p := New(e.cfg)
	ctx := context.Background()
	pod := testPod("a")
	src := &v1.CSIVolumeSource{Driver: driverName, VolumeAttributes: map[string]string{"size": "1Mi"}}
	res, err := p.SetUp(ctx, Request{Pod: pod, SpecName: "scratch", Inline: src})
	if err != nil {
		t.Fatal(err)
	}
	handle := EphemeralHandle("uid-a", "scratch")
	equalCalls(t, e.srv.takeCalls(), "NodePublishVolume "+handle)
	attrs := e.srv.publish.VolumeContext
	if attrs[ctxEphemeral] != "true" || attrs["size"] != "1Mi" || !strings.Contains(attrs[ctxTokens], `"vault":{"token":"token-for-ns/sa@vault"`) {
		t.Errorf("volume context %v", attrs)
	}
	if d := readData(t, filepath.Dir(res.Path)); d[keyLifecycleMode] != lifecycleEphemera || d[keySpecVolID] != "scratch" {
		t.Errorf("vol_data.json %v", d)
	}
	if err := p.TearDownPod(ctx, "uid-a"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume "+handle)

	// A driver whose CSIDriver does not list Ephemeral refuses inline volumes.
	e.cfg.CSIDrivers.(drivers)[driverName].Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	_, err = p.SetUp(ctx, Request{Pod: pod, SpecName: "scratch", Inline: src})
	if err == nil || !strings.Contains(err.Error(), `volume mode "Ephemeral" not supported by driver hostpath.csi.test (only supports ["Persistent"])`) {
		t.Fatalf("err %v", err)
	}
}

func TestUnregisteredDriver(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.cfg.Drivers = NewDrivers()
	p := New(e.cfg)
	_, err := p.SetUp(context.Background(), Request{Pod: testPod("a"), SpecName: "pv-h1", PV: testPV("h1")})
	want := `MountVolume.MountDevice failed for volume "pv-h1" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name hostpath.csi.test not found in the list of registered CSI drivers`
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrDriverNotRegistered) {
		t.Error("not ErrDriverNotRegistered")
	}
}

func TestPublishErrors(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	p := New(e.cfg)
	ctx := context.Background()
	pv := testPV("h1")
	dir := PodVolumeDir(e.pods, "uid-a", pv.Name)

	// A final error leaves nothing in the pod's directory.
	e.srv.publishErr = status.Error(codes.Internal, "injected")
	if _, err := p.SetUp(ctx, Request{Pod: testPod("a"), SpecName: pv.Name, PV: pv}); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("pod volume dir after a final error: %v", err)
	}
	// An uncertain one (the driver died) keeps vol_data.json, so that the
	// teardown unpublishes whatever the driver may have mounted.
	e.srv.publishErr = status.Error(codes.Unavailable, "connection reset")
	if _, err := p.SetUp(ctx, Request{Pod: testPod("a"), SpecName: pv.Name, PV: pv}); err == nil {
		t.Fatal("no error")
	}
	if d := readData(t, dir); d[keyVolumeHandle] != "h1" {
		t.Fatalf("vol_data.json %v", d)
	}
	e.srv.takeCalls()
	if err := p.TearDownPod(ctx, "uid-a"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h1", "NodeUnstageVolume h1")
}

func TestAttachRequired(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.cfg.CSIDrivers.(drivers)[driverName].Spec.AttachRequired = ptr.To(true)
	var node *v1.Node
	e.cfg.Node = func() *v1.Node { return node }
	kicked := 0
	e.cfg.InUseChanged = func() { kicked++ }
	p := New(e.cfg)
	ctx := context.Background()
	pv := testPV("h1")
	r := Request{Pod: testPod("a"), SpecName: pv.Name, PV: pv}
	unique := UniqueVolumeName(driverName, "h1")

	_, err := p.SetUp(ctx, r)
	if err == nil || !strings.Contains(err.Error(), "MountVolume.WaitForAttach failed") || !strings.Contains(err.Error(), "VolumesInUse") {
		t.Fatalf("err %v", err)
	}
	if kicked != 1 || len(p.VolumesInUse()) != 1 || p.VolumesInUse()[0] != v1.UniqueVolumeName(unique) {
		t.Fatalf("in use %v, node status kicked %d times", p.VolumesInUse(), kicked)
	}
	node = &v1.Node{Status: v1.NodeStatus{VolumesInUse: []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)}}}
	if _, err = p.SetUp(ctx, r); err == nil || !strings.Contains(err.Error(), "not attached according to node status") {
		t.Fatalf("err %v", err)
	}
	node.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique)}}
	if _, err = p.SetUp(ctx, r); err == nil || !strings.Contains(err.Error(), "volumeattachments") {
		t.Fatalf("err %v", err)
	}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: AttachmentName("h1", driverName, "n1")},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"dev": "/dev/x"}}}
	if _, err := e.cs.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err = p.SetUp(ctx, r); err != nil {
		t.Fatal(err)
	}
	if e.srv.stage.PublishContext["dev"] != "/dev/x" || e.srv.publish.PublishContext["dev"] != "/dev/x" {
		t.Errorf("publish context %v / %v", e.srv.stage.PublishContext, e.srv.publish.PublishContext)
	}
	if err := p.TearDownPod(ctx, "uid-a"); err != nil {
		t.Fatal(err)
	}
	if got := p.VolumesInUse(); len(got) != 0 {
		t.Errorf("still in use after teardown: %v", got)
	}
}

func TestCleanupOrphansUnstagesUnreferencedGlobalMounts(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	p := New(e.cfg)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		pv := testPV("h-" + id)
		if _, err := p.SetUp(ctx, Request{Pod: testPod(id), SpecName: pv.Name, PV: pv}); err != nil {
			t.Fatal(err)
		}
	}
	e.srv.takeCalls()
	// A restarted kubelet: pod a was deleted while it was down.
	p = New(e.cfg)
	if err := p.CleanupOrphans(ctx, map[string]bool{"uid-b": true}); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h-a", "NodeUnstageVolume h-a")
	// A staged volume whose pod directory is gone (a crash between the two
	// steps) is unstaged too.
	if err := os.RemoveAll(filepath.Join(e.pods, "uid-b")); err != nil {
		t.Fatal(err)
	}
	p = New(e.cfg)
	if err := p.CleanupOrphans(ctx, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnstageVolume h-b")
}

func TestBlockVolume(t *testing.T) {
	e := newEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	p := New(e.cfg)
	ctx := context.Background()
	pv := testPV("h1")
	pv.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	dev, err := p.SetUpBlock(ctx, Request{Pod: testPod("a"), SpecName: pv.Name, PV: pv})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(e.root, "plugins", "kubernetes.io", "csi", "volumeDevices")
	if dev != filepath.Join(e.pods, "uid-a", "volumeDevices", "kubernetes.io~csi", pv.Name) {
		t.Fatalf("device %s", dev)
	}
	if target, err := os.Readlink(dev); err != nil || target != filepath.Join(base, "publish", pv.Name, "uid-a") {
		t.Fatalf("device link -> %s (%v)", target, err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeStageVolume h1", "NodePublishVolume h1")
	if e.srv.stage.VolumeCapability.GetBlock() == nil || e.srv.stage.StagingTargetPath != filepath.Join(base, "staging", pv.Name) {
		t.Fatalf("stage %v at %s", e.srv.stage.VolumeCapability, e.srv.stage.StagingTargetPath)
	}
	if d := readData(t, filepath.Join(base, pv.Name, "data")); d[keyVolumeHandle] != "h1" || d[keyDriverName] != driverName {
		t.Fatalf("vol_data.json %v", d)
	}
	if _, err := p.SetUpBlock(ctx, Request{Pod: testPod("b"), SpecName: pv.Name, PV: pv}); err != nil {
		t.Fatal(err)
	}
	e.srv.takeCalls()
	if err := p.TearDownPod(ctx, "uid-a"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h1")
	if err := p.TearDownPod(ctx, "uid-b"); err != nil {
		t.Fatal(err)
	}
	equalCalls(t, e.srv.takeCalls(), "NodeUnpublishVolume h1", "NodeUnstageVolume h1")
	if _, err := os.Stat(filepath.Join(base, pv.Name)); !os.IsNotExist(err) {
		t.Errorf("block data dir left: %v", err)
	}
}
