package kubeclient

import (
	"context"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Scheme knows the kinds of the groups the kubelet uses, and nothing else.
// Event recorders take it to build object references.
var Scheme = runtime.NewScheme()

var (
	codecs         = serializer.NewCodecFactory(Scheme)
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	// Unversioned meta types (options, Status, WatchEvent) as client-go's
	// scheme registers them.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		coordinationv1.AddToScheme,
		authenticationv1.AddToScheme,
		authorizationv1.AddToScheme,
		certificatesv1.AddToScheme,
		storagev1.AddToScheme,
		nodev1.AddToScheme,
	} {
		utilruntime.Must(add(Scheme))
	}
}

// Interface is the API surface the kubelet uses, grouped as in client-go.
type Interface interface {
	CoreV1() CoreV1Interface
	CoordinationV1() CoordinationV1Interface
	AuthenticationV1() AuthenticationV1Interface
	AuthorizationV1() AuthorizationV1Interface
	CertificatesV1() CertificatesV1Interface
	StorageV1() StorageV1Interface
	NodeV1() NodeV1Interface
}

// CoreV1Interface is the core/v1 subset the kubelet uses.
type CoreV1Interface interface {
	// RESTClient serves list/watch for informers and reflectors.
	RESTClient() rest.Interface
	Pods(namespace string) PodInterface
	Nodes() NodeInterface
	ConfigMaps(namespace string) ConfigMapInterface
	Secrets(namespace string) SecretInterface
	Services(namespace string) ServiceInterface
	ServiceAccounts(namespace string) ServiceAccountInterface
	Events(namespace string) EventInterface
	PersistentVolumeClaims(namespace string) PersistentVolumeClaimInterface
	PersistentVolumes() PersistentVolumeInterface
}

// PodInterface: mirror pods and pod status.
type PodInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
}

// NodeInterface: registration and node status.
type NodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	Create(ctx context.Context, node *corev1.Node, opts metav1.CreateOptions) (*corev1.Node, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error)
}

// ConfigMapInterface: pod inputs.
type ConfigMapInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
}

// SecretInterface: pod inputs and image pull secrets.
type SecretInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
}

// ServiceInterface: service environment variables.
type ServiceInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Service, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ServiceList, error)
}

// ServiceAccountInterface: projected service account tokens, and the
// account itself for credential provider plugins in token mode.
type ServiceAccountInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ServiceAccount, error)
	CreateToken(ctx context.Context, serviceAccountName string, tokenRequest *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error)
}

// EventInterface: the event sink.
type EventInterface interface {
	Create(ctx context.Context, event *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error)
	Update(ctx context.Context, event *corev1.Event, opts metav1.UpdateOptions) (*corev1.Event, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Event, error)
}

// PersistentVolumeClaimInterface: claims of pod volumes.
type PersistentVolumeClaimInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error)
}

// PersistentVolumeInterface: volumes bound to pod claims.
type PersistentVolumeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolume, error)
}

// StorageV1Interface is the storage.k8s.io/v1 subset the kubelet uses: the
// CSI node side.
type StorageV1Interface interface {
	// RESTClient serves list/watch of CSIDrivers for the driver cache.
	RESTClient() rest.Interface
	CSIDrivers() CSIDriverInterface
	CSINodes() CSINodeInterface
	VolumeAttachments() VolumeAttachmentInterface
}

// CSIDriverInterface: a driver's attach, pod info and fsGroup policy.
type CSIDriverInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.CSIDriver, error)
}

// CSINodeInterface: the node's registered CSI drivers.
type CSINodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.CSINode, error)
	Create(ctx context.Context, node *storagev1.CSINode, opts metav1.CreateOptions) (*storagev1.CSINode, error)
	Update(ctx context.Context, node *storagev1.CSINode, opts metav1.UpdateOptions) (*storagev1.CSINode, error)
}

// VolumeAttachmentInterface: waiting for a CSI volume to be attached.
type VolumeAttachmentInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.VolumeAttachment, error)
}

// CoordinationV1Interface: the node lease.
type CoordinationV1Interface interface {
	Leases(namespace string) LeaseInterface
}

// LeaseInterface: the node lease.
type LeaseInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// AuthenticationV1Interface: webhook authentication of the kubelet API.
type AuthenticationV1Interface interface {
	TokenReviews() TokenReviewInterface
}

// TokenReviewInterface creates token reviews.
type TokenReviewInterface interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// AuthorizationV1Interface: webhook authorization of the kubelet API.
type AuthorizationV1Interface interface {
	SubjectAccessReviews() SubjectAccessReviewInterface
}

// SubjectAccessReviewInterface creates subject access reviews.
type SubjectAccessReviewInterface interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// CertificatesV1Interface: TLS bootstrap and certificate rotation.
type CertificatesV1Interface interface {
	CertificateSigningRequests() CertificateSigningRequestInterface
}

// CertificateSigningRequestInterface requests a certificate and watches
// for it to be issued.
type CertificateSigningRequestInterface interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
	List(ctx context.Context, opts metav1.ListOptions) (*certificatesv1.CertificateSigningRequestList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NodeV1Interface: RuntimeClasses, for runtimeClassName.
type NodeV1Interface interface {
	// RESTClient serves list/watch for the RuntimeClass cache.
	RESTClient() rest.Interface
	RuntimeClasses() RuntimeClassInterface
}

// RuntimeClassInterface reads RuntimeClasses.
type RuntimeClassInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*nodev1.RuntimeClass, error)
}

// Client implements Interface over one RESTClient per group.
type Client struct {
	core, coordination, authentication, authorization, certificates, storage, node rest.Interface
}

var _ Interface = (*Client)(nil)

// NewForConfig builds a Client as client-go's kubernetes.NewForConfig does:
// one transport shared by all groups, and one token-bucket rate limiter from
// QPS/Burst unless c carries a RateLimiter or QPS is not positive.
func NewForConfig(c *rest.Config) (*Client, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, httpClient)
}

// NewForConfigAndClient is NewForConfig over an existing http.Client (whose
// connections the caller then owns), as client-go's.
func NewForConfigAndClient(c *rest.Config, httpClient *http.Client) (*Client, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var out Client
	var err error
	for _, g := range []struct {
		dst     *rest.Interface
		gv      schema.GroupVersion
		apiPath string
	}{
		{&out.core, corev1.SchemeGroupVersion, "/api"},
		{&out.coordination, coordinationv1.SchemeGroupVersion, "/apis"},
		{&out.authentication, authenticationv1.SchemeGroupVersion, "/apis"},
		{&out.authorization, authorizationv1.SchemeGroupVersion, "/apis"},
		{&out.certificates, certificatesv1.SchemeGroupVersion, "/apis"},
		{&out.storage, storagev1.SchemeGroupVersion, "/apis"},
		{&out.node, nodev1.SchemeGroupVersion, "/apis"},
	} {
		if *g.dst, err = restClientFor(cfg, g.gv, g.apiPath, httpClient); err != nil {
			return nil, fmt.Errorf("%s client: %w", g.gv, err)
		}
	}
	return &out, nil
}

func restClientFor(cfg rest.Config, gv schema.GroupVersion, apiPath string, httpClient *http.Client) (rest.Interface, error) {
	cfg.GroupVersion = &gv
	cfg.APIPath = apiPath
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, codecs).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&cfg, httpClient)
}

// CoreV1 returns the core/v1 client.
func (c *Client) CoreV1() CoreV1Interface { return coreV1{c.core} }

// CoordinationV1 returns the coordination.k8s.io/v1 client.
func (c *Client) CoordinationV1() CoordinationV1Interface { return coordinationV1{c.coordination} }

// AuthenticationV1 returns the authentication.k8s.io/v1 client.
func (c *Client) AuthenticationV1() AuthenticationV1Interface {
	return authenticationV1{c.authentication}
}

// AuthorizationV1 returns the authorization.k8s.io/v1 client.
func (c *Client) AuthorizationV1() AuthorizationV1Interface { return authorizationV1{c.authorization} }

// CertificatesV1 returns the certificates.k8s.io/v1 client.
func (c *Client) CertificatesV1() CertificatesV1Interface { return certificatesV1{c.certificates} }

// StorageV1 returns the storage.k8s.io/v1 client.
func (c *Client) StorageV1() StorageV1Interface { return storageV1{c.storage} }

// NodeV1 returns the node.k8s.io/v1 client.
func (c *Client) NodeV1() NodeV1Interface { return nodeV1{c.node} }

type coreV1 struct{ rc rest.Interface }

func (c coreV1) RESTClient() rest.Interface { return c.rc }
func (c coreV1) Pods(ns string) PodInterface {
	return &resource[corev1.Pod, *corev1.Pod]{c.rc, ns, "pods"}
}
func (c coreV1) Nodes() NodeInterface { return &resource[corev1.Node, *corev1.Node]{c.rc, "", "nodes"} }
func (c coreV1) ConfigMaps(ns string) ConfigMapInterface {
	return &resource[corev1.ConfigMap, *corev1.ConfigMap]{c.rc, ns, "configmaps"}
}
func (c coreV1) Secrets(ns string) SecretInterface {
	return &resource[corev1.Secret, *corev1.Secret]{c.rc, ns, "secrets"}
}
func (c coreV1) Services(ns string) ServiceInterface {
	return &services{resource[corev1.Service, *corev1.Service]{c.rc, ns, "services"}}
}
func (c coreV1) ServiceAccounts(ns string) ServiceAccountInterface {
	return &serviceAccounts{c.rc, ns}
}
func (c coreV1) Events(ns string) EventInterface {
	return &resource[corev1.Event, *corev1.Event]{c.rc, ns, "events"}
}

func (c coreV1) PersistentVolumeClaims(ns string) PersistentVolumeClaimInterface {
	return &resource[corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaim]{c.rc, ns, "persistentvolumeclaims"}
}
func (c coreV1) PersistentVolumes() PersistentVolumeInterface {
	return &resource[corev1.PersistentVolume, *corev1.PersistentVolume]{c.rc, "", "persistentvolumes"}
}

type storageV1 struct{ rc rest.Interface }

func (c storageV1) RESTClient() rest.Interface { return c.rc }
func (c storageV1) CSIDrivers() CSIDriverInterface {
	return &resource[storagev1.CSIDriver, *storagev1.CSIDriver]{c.rc, "", "csidrivers"}
}
func (c storageV1) CSINodes() CSINodeInterface {
	return &resource[storagev1.CSINode, *storagev1.CSINode]{c.rc, "", "csinodes"}
}
func (c storageV1) VolumeAttachments() VolumeAttachmentInterface {
	return &resource[storagev1.VolumeAttachment, *storagev1.VolumeAttachment]{c.rc, "", "volumeattachments"}
}

type coordinationV1 struct{ rc rest.Interface }

func (c coordinationV1) Leases(ns string) LeaseInterface {
	return &resource[coordinationv1.Lease, *coordinationv1.Lease]{c.rc, ns, "leases"}
}

type authenticationV1 struct{ rc rest.Interface }

func (c authenticationV1) TokenReviews() TokenReviewInterface {
	return &resource[authenticationv1.TokenReview, *authenticationv1.TokenReview]{c.rc, "", "tokenreviews"}
}

type authorizationV1 struct{ rc rest.Interface }

func (c authorizationV1) SubjectAccessReviews() SubjectAccessReviewInterface {
	return &resource[authorizationv1.SubjectAccessReview, *authorizationv1.SubjectAccessReview]{c.rc, "", "subjectaccessreviews"}
}

type certificatesV1 struct{ rc rest.Interface }

func (c certificatesV1) CertificateSigningRequests() CertificateSigningRequestInterface {
	return &csrs{resource[certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequest]{c.rc, "", "certificatesigningrequests"}}
}

type nodeV1 struct{ rc rest.Interface }

func (c nodeV1) RESTClient() rest.Interface { return c.rc }
func (c nodeV1) RuntimeClasses() RuntimeClassInterface {
	return &resource[nodev1.RuntimeClass, *nodev1.RuntimeClass]{c.rc, "", "runtimeclasses"}
}

// object is a pointer to an API type.
type object[T any] interface {
	*T
	runtime.Object
	GetName() string
}

// resource is one resource of a group, namespaced when ns is set; its
// methods mirror client-go's gentype.Client.
type resource[T any, PT object[T]] struct {
	rc       rest.Interface
	ns       string
	resource string
}

func (r *resource[T, PT]) req(verb string) *rest.Request {
	return r.rc.Verb(verb).UseProtobufAsDefault().NamespaceIfScoped(r.ns, r.ns != "").Resource(r.resource)
}

func (r *resource[T, PT]) Get(ctx context.Context, name string, opts metav1.GetOptions) (PT, error) {
	out := PT(new(T))
	err := r.req(http.MethodGet).Name(name).VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

func (r *resource[T, PT]) Create(ctx context.Context, obj PT, opts metav1.CreateOptions) (PT, error) {
	out := PT(new(T))
	err := r.req(http.MethodPost).VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r *resource[T, PT]) Update(ctx context.Context, obj PT, opts metav1.UpdateOptions) (PT, error) {
	out := PT(new(T))
	err := r.req(http.MethodPut).Name(obj.GetName()).VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r *resource[T, PT]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req(http.MethodDelete).Name(name).Body(&opts).Do(ctx).Error()
}

func (r *resource[T, PT]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (PT, error) {
	out := PT(new(T))
	err := r.rc.Patch(pt).UseProtobufAsDefault().NamespaceIfScoped(r.ns, r.ns != "").Resource(r.resource).
		Name(name).SubResource(subresources...).VersionedParams(&opts, parameterCodec).Body(data).Do(ctx).Into(out)
	return out, err
}

type services struct {
	resource[corev1.Service, *corev1.Service]
}

func (s *services) List(ctx context.Context, opts metav1.ListOptions) (*corev1.ServiceList, error) {
	out := &corev1.ServiceList{}
	err := s.listRequest(opts).Do(ctx).Into(out)
	return out, err
}

type csrs struct {
	resource[certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequest]
}

func (c *csrs) List(ctx context.Context, opts metav1.ListOptions) (*certificatesv1.CertificateSigningRequestList, error) {
	out := &certificatesv1.CertificateSigningRequestList{}
	err := c.listRequest(opts).Do(ctx).Into(out)
	return out, err
}

func (c *csrs) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.listRequest(opts).Watch(ctx)
}

// listRequest is a GET of the collection with opts, bounded by
// opts.TimeoutSeconds as client-go's generated clients do.
func (r *resource[T, PT]) listRequest(opts metav1.ListOptions) *rest.Request {
	req := r.req(http.MethodGet).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return req
}

type serviceAccounts struct {
	rc rest.Interface
	ns string
}

func (s *serviceAccounts) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ServiceAccount, error) {
	r := &resource[corev1.ServiceAccount, *corev1.ServiceAccount]{s.rc, s.ns, "serviceaccounts"}
	return r.Get(ctx, name, opts)
}

func (s *serviceAccounts) CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	out := &authenticationv1.TokenRequest{}
	err := s.rc.Post().UseProtobufAsDefault().Namespace(s.ns).Resource("serviceaccounts").Name(name).
		SubResource("token").VersionedParams(&opts, parameterCodec).Body(tr).Do(ctx).Into(out)
	return out, err
}
