package mirror

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Client creates and deletes mirror pods.
type Client struct {
	client   kubeclient.Interface
	nodeName string
	nodeUID  func() types.UID
}

// Config configures a Client.
type Config struct {
	Client   kubeclient.Interface // required
	NodeName string               // required
	// NodeUID returns the Node's UID for the owner reference ("" = unknown yet).
	NodeUID func() types.UID
}

// New returns a Client.
func New(cfg Config) *Client {
	return &Client{client: cfg.Client, nodeName: cfg.NodeName, nodeUID: cfg.NodeUID}
}

// Build returns the mirror pod object of a static pod; it is pure.
func Build(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	mp := static.DeepCopy()
	mp.UID = ""
	mp.ResourceVersion = ""
	mp.CreationTimestamp = metav1.Time{}
	mp.Status = v1.PodStatus{}
	if mp.Annotations == nil {
		mp.Annotations = map[string]string{}
	}
	mp.Annotations[podutil.ConfigMirrorAnnotationKey] = static.Annotations[podutil.ConfigHashAnnotationKey]
	if nodeUID != "" {
		controller := true
		mp.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID, Controller: &controller,
		}}
	}
	return mp
}

// Create creates the mirror pod of static; an existing one is not an error.
func (c *Client) Create(ctx context.Context, static *v1.Pod) error {
	var uid types.UID
	if c.nodeUID != nil {
		uid = c.nodeUID()
	}
	if uid == "" {
		return fmt.Errorf("create mirror pod %s/%s: the Node's UID is not known yet", static.Namespace, static.Name)
	}
	mp := Build(static, c.nodeName, uid)
	_, err := c.client.CoreV1().Pods(mp.Namespace).Create(ctx, mp, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create mirror pod %s/%s: %w", mp.Namespace, mp.Name, err)
	}
	klog.V(2).InfoS("Created mirror pod", "pod", klog.KObj(mp))
	return nil
}

// Delete removes a mirror pod now (grace period 0), only if it still has uid.
func (c *Client) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	zero := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := c.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete mirror pod %s/%s: %w", namespace, name, err)
	}
	klog.V(2).InfoS("Deleted mirror pod", "pod", klog.KRef(namespace, name), "podUID", uid)
	return nil
}
