package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// provisioner creates volumes with the driver's CreateVolume for claims of
// StorageClasses naming the driver, as external-provisioner does.
type provisioner struct {
	driver string
	ctrl   csi.ControllerClient
}

var (
	_ controller.Provisioner      = (*provisioner)(nil)
	_ controller.BlockProvisioner = (*provisioner)(nil)
)

// SupportsBlock: the driver provisions volumeMode Block claims too.
func (p *provisioner) SupportsBlock(context.Context) bool { return true }

// Parameters the provisioner consumes itself rather than passing on.
const paramFSType = "csi.storage.k8s.io/fstype"

func (p *provisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	pvc, sc := opts.PVC, opts.StorageClass
	size := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	block := pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode == v1.PersistentVolumeBlock
	capability := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	if block {
		capability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		capability.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: sc.Parameters[paramFSType]}}
	}
	params := map[string]string{}
	for k, v := range sc.Parameters {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			params[k] = v
		}
	}
	resp, err := p.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: opts.PVName, CapacityRange: &csi.CapacityRange{RequiredBytes: size.Value()},
		VolumeCapabilities: []*csi.VolumeCapability{capability}, Parameters: params,
	})
	if err != nil {
		return nil, controller.ProvisioningInBackground, fmt.Errorf("CreateVolume: %w", err)
	}
	vol := resp.GetVolume()
	reclaim := v1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			MountOptions:                  sc.MountOptions,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(vol.GetCapacityBytes(), resource.BinarySI)},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: p.driver, VolumeHandle: vol.GetVolumeId(), FSType: sc.Parameters[paramFSType], VolumeAttributes: vol.GetVolumeContext(),
			}},
		},
	}
	var terms []v1.NodeSelectorTerm
	for _, t := range vol.GetAccessibleTopology() {
		var reqs []v1.NodeSelectorRequirement
		for k, v := range t.GetSegments() {
			reqs = append(reqs, v1.NodeSelectorRequirement{Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{v}})
		}
		terms = append(terms, v1.NodeSelectorTerm{MatchExpressions: reqs})
	}
	if len(terms) > 0 {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: terms}}
	}
	log.Printf("provisioned %s (%s, %d bytes) for %s/%s", pv.Name, vol.GetVolumeId(), vol.GetCapacityBytes(), pvc.Namespace, pvc.Name)
	return pv, controller.ProvisioningFinished, nil
}

func (p *provisioner) Delete(ctx context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != p.driver {
		return &controller.IgnoredError{Reason: "not this driver's volume"}
	}
	_, err := p.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle})
	if err == nil {
		log.Printf("deleted %s (%s)", pv.Name, pv.Spec.CSI.VolumeHandle)
	}
	return err
}

func runProvisioner(args []string) error {
	fl := flag.NewFlagSet("provisioner", flag.ExitOnError)
	kubeconfig := fl.String("kubeconfig", "", "admin kubeconfig")
	csiAddress := fl.String("csi-address", "", "the driver's socket")
	attach := fl.Bool("attach", false, "also attach volumes (VolumeAttachments) as external-attacher does")
	fl.Parse(args)
	if *kubeconfig == "" || *csiAddress == "" {
		return errors.New("--kubeconfig and --csi-address are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopOnSignal(cancel)
	cctx, ccancel := context.WithTimeout(ctx, time.Minute)
	conn, err := connection.Connect(cctx, *csiAddress, nil)
	if err != nil {
		ccancel()
		return err
	}
	name, err := rpc.GetDriverName(cctx, conn)
	ccancel()
	if err != nil {
		return err
	}
	if *attach {
		go runAttacher(ctx, client, name, conn)
	}
	log.Printf("provisioning for %s", name)
	pc := controller.NewProvisionController(ctx, client, name, &provisioner{driver: name, ctrl: csi.NewControllerClient(conn)},
		controller.LeaderElection(false), controller.Threadiness(4), controller.ResyncPeriod(15*time.Second),
		controller.CreateProvisionedPVInterval(200*time.Millisecond), controller.FailedProvisionThreshold(0))
	pc.Run(ctx)
	return nil
}

// runAttacher attaches the driver's VolumeAttachments with
// ControllerPublishVolume and detaches them when they are deleted, as
// external-attacher does.
func runAttacher(ctx context.Context, client kubernetes.Interface, driver string, conn *grpc.ClientConn) {
	ctrl := csi.NewControllerClient(conn)
	finalizer := "external-attacher/" + strings.ReplaceAll(driver, "/", "-")
	factory := informers.NewSharedInformerFactory(client, 15*time.Second)
	inf := factory.Storage().V1().VolumeAttachments().Informer()
	handle := func(obj any) {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok || va.Spec.Attacher != driver {
			return
		}
		if err := syncAttachment(ctx, client, ctrl, finalizer, va.DeepCopy()); err != nil {
			log.Printf("attachment %s: %v", va.Name, err)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, n any) { handle(n) }})
	factory.Start(ctx.Done())
	<-ctx.Done()
}

func syncAttachment(ctx context.Context, client kubernetes.Interface, ctrl csi.ControllerClient, finalizer string, va *storagev1.VolumeAttachment) error {
	vas := client.StorageV1().VolumeAttachments()
	if va.Spec.Source.PersistentVolumeName == nil {
		return nil
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, *va.Spec.Source.PersistentVolumeName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	nodeID := va.Spec.NodeName
	if va.DeletionTimestamp != nil {
		if pv != nil && pv.Spec.CSI != nil {
			if _, err := ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle, NodeId: nodeID}); err != nil {
				return err
			}
		}
		var keep []string
		for _, f := range va.Finalizers {
			if f != finalizer {
				keep = append(keep, f)
			}
		}
		va.Finalizers = keep
		_, err := vas.Update(ctx, va, metav1.UpdateOptions{})
		log.Printf("detached %s from %s", va.Name, nodeID)
		return err
	}
	if va.Status.Attached || pv == nil || pv.Spec.CSI == nil {
		return nil
	}
	hasFinalizer := false
	for _, f := range va.Finalizers {
		hasFinalizer = hasFinalizer || f == finalizer
	}
	if !hasFinalizer {
		va.Finalizers = append(va.Finalizers, finalizer)
		if va, err = vas.Update(ctx, va, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	resp, err := ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle, NodeId: nodeID,
		VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}})
	if err != nil {
		return err
	}
	return wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 5}, func(ctx context.Context) (bool, error) {
		cur, err := vas.Get(ctx, va.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cur.Status.Attached, cur.Status.AttachmentMetadata, cur.Status.AttachError = true, resp.GetPublishContext(), nil
		if _, err := vas.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return false, nil
		}
		log.Printf("attached %s to %s", va.Name, nodeID)
		return true, nil
	})
}
