// Package kubeclienttest adapts a client-go clientset (normally
// k8s.io/client-go/kubernetes/fake) to kubeclient.Interface for tests. Only
// test code may import it: it links the full clientset.
package kubeclienttest

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// Wrap exposes cs through kubeclient.Interface; every call goes to cs.
func Wrap(cs kubernetes.Interface) kubeclient.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) CoreV1() kubeclient.CoreV1Interface { return core{c.cs} }
func (c clientset) CoordinationV1() kubeclient.CoordinationV1Interface {
	return coordination{c.cs}
}
func (c clientset) AuthenticationV1() kubeclient.AuthenticationV1Interface {
	return authentication{c.cs}
}
func (c clientset) AuthorizationV1() kubeclient.AuthorizationV1Interface {
	return authorization{c.cs}
}
func (c clientset) CertificatesV1() kubeclient.CertificatesV1Interface {
	return certificates{c.cs}
}
func (c clientset) StorageV1() kubeclient.StorageV1Interface { return storage{c.cs} }
func (c clientset) NodeV1() kubeclient.NodeV1Interface       { return node{c.cs} }

type core struct{ cs kubernetes.Interface }

func (c core) RESTClient() rest.Interface                   { return c.cs.CoreV1().RESTClient() }
func (c core) Pods(ns string) kubeclient.PodInterface       { return c.cs.CoreV1().Pods(ns) }
func (c core) Nodes() kubeclient.NodeInterface              { return c.cs.CoreV1().Nodes() }
func (c core) Secrets(ns string) kubeclient.SecretInterface { return c.cs.CoreV1().Secrets(ns) }
func (c core) Events(ns string) kubeclient.EventInterface   { return c.cs.CoreV1().Events(ns) }
func (c core) ConfigMaps(ns string) kubeclient.ConfigMapInterface {
	return c.cs.CoreV1().ConfigMaps(ns)
}
func (c core) Services(ns string) kubeclient.ServiceInterface { return c.cs.CoreV1().Services(ns) }
func (c core) ServiceAccounts(ns string) kubeclient.ServiceAccountInterface {
	return c.cs.CoreV1().ServiceAccounts(ns)
}

func (c core) PersistentVolumeClaims(ns string) kubeclient.PersistentVolumeClaimInterface {
	return c.cs.CoreV1().PersistentVolumeClaims(ns)
}
func (c core) PersistentVolumes() kubeclient.PersistentVolumeInterface {
	return c.cs.CoreV1().PersistentVolumes()
}

type storage struct{ cs kubernetes.Interface }

func (c storage) RESTClient() rest.Interface { return c.cs.StorageV1().RESTClient() }
func (c storage) CSIDrivers() kubeclient.CSIDriverInterface {
	return c.cs.StorageV1().CSIDrivers()
}
func (c storage) CSINodes() kubeclient.CSINodeInterface { return c.cs.StorageV1().CSINodes() }
func (c storage) VolumeAttachments() kubeclient.VolumeAttachmentInterface {
	return c.cs.StorageV1().VolumeAttachments()
}

type coordination struct{ cs kubernetes.Interface }

func (c coordination) Leases(ns string) kubeclient.LeaseInterface {
	return c.cs.CoordinationV1().Leases(ns)
}

type authentication struct{ cs kubernetes.Interface }

func (c authentication) TokenReviews() kubeclient.TokenReviewInterface {
	return c.cs.AuthenticationV1().TokenReviews()
}

type authorization struct{ cs kubernetes.Interface }

func (c authorization) SubjectAccessReviews() kubeclient.SubjectAccessReviewInterface {
	return c.cs.AuthorizationV1().SubjectAccessReviews()
}

type certificates struct{ cs kubernetes.Interface }

func (c certificates) CertificateSigningRequests() kubeclient.CertificateSigningRequestInterface {
	return c.cs.CertificatesV1().CertificateSigningRequests()
}

type node struct{ cs kubernetes.Interface }

func (c node) RESTClient() rest.Interface { return c.cs.NodeV1().RESTClient() }
func (c node) RuntimeClasses() kubeclient.RuntimeClassInterface {
	return c.cs.NodeV1().RuntimeClasses()
}
