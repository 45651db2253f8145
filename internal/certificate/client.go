package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"

	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// Upstream's names in --cert-dir.
const (
	// clientPairPrefix names the client pairs: kubelet-client-<ts>.pem and
	// the kubelet-client-current.pem link.
	clientPairPrefix = "kubelet-client"
	// pendingClientKey keeps a bootstrap key until its certificate is
	// issued (bootstrap without rotation).
	pendingClientKey = "kubelet-client.key.tmp"
)

// ClientConfig configures NewClient.
type ClientConfig struct {
	// Kubeconfig is --kubeconfig (required).
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig: credentials to request
	// a client certificate with when Kubeconfig is missing or its
	// certificate is expired or unusable.
	BootstrapKubeconfig string
	// CertDir is --cert-dir (required with bootstrap or rotation).
	CertDir string
	// NodeName is the certificate's identity: CN system:node:<NodeName>,
	// O system:nodes.
	NodeName string
	// Rotate is rotateCertificates (--rotate-certificates).
	Rotate bool
	// RequestedLifetime, optional, asks for certificates of this lifetime
	// (CSR spec.expirationSeconds; the API minimum is 10 minutes).
	RequestedLifetime *time.Duration
	// WaitTimeout bounds one wait for a CSR (DefaultWaitTimeout when zero).
	WaitTimeout time.Duration
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// Client is the kubelet's identity towards the API server.
type Client struct {
	// Config is what the API clients are built from. With a Manager, its
	// requests carry the managed certificate, wait for one during TLS
	// bootstrap, and reconnect when it changes.
	Config *rest.Config
	// Manager is nil when the kubeconfig is used as it is (no bootstrap, no
	// rotation).
	Manager *Manager
	// Metrics are the client certificate's, nil without a Manager.
	Metrics *Metrics

	cfg ClientConfig
	// kubeconfigAfterIssue: write the kubeconfig once the first certificate
	// is issued (bootstrap without rotation, as upstream).
	kubeconfigAfterIssue bool
	// cluster is the API server and CA the kubeconfig is written with.
	cluster *rest.Config
	store   *FileStore
}

// NewClient decides, as upstream's kubelet does at start-up, how it
// authenticates:
//   - no bootstrap kubeconfig and no rotation: the kubeconfig as it is;
//   - the kubeconfig is valid and rotation is off: the same;
//   - the kubeconfig is valid and rotation is on: its certificate (an
//     embedded one is copied into the cert dir first, as kubeadm's control
//     plane expects) is renewed through CSRs;
//   - the kubeconfig is missing, expired or unusable: a certificate is
//     requested with the bootstrap kubeconfig and stored in the cert dir,
//     and the kubeconfig is rewritten to point at
//     <cert-dir>/kubelet-client-current.pem (at once with rotation, as
//     upstream; after the certificate is issued without).
//
// Requests never wait on start-up: Run does the work.
func NewClient(ctx context.Context, c ClientConfig) (*Client, error) {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.BootstrapKubeconfig == "" && !c.Rotate {
		cfg, err := loadKubeconfig(c.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("unable to load kubeconfig: %w", err)
		}
		return &Client{Config: cfg}, nil
	}
	valid, why := kubeconfigValid(c.Kubeconfig, c.Clock.Now())
	if valid && !c.Rotate {
		klog.V(2).InfoS("Kubeconfig exists and is valid, skipping bootstrap", "path", c.Kubeconfig)
		cfg, err := loadKubeconfig(c.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("unable to load kubeconfig: %w", err)
		}
		return &Client{Config: cfg}, nil
	}
	out := &Client{cfg: c, Metrics: NewClientMetrics()}
	var base *rest.Config
	bootstrap := !valid && c.BootstrapKubeconfig != ""
	if bootstrap {
		klog.InfoS("Client certificate needed; requesting one with the bootstrap kubeconfig", "kubeconfig", c.Kubeconfig, "reason", why, "bootstrapKubeconfig", c.BootstrapKubeconfig)
		boot, err := loadKubeconfig(c.BootstrapKubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %s, and the bootstrap kubeconfig cannot be loaded: %w", c.Kubeconfig, why, err)
		}
		base = boot
	} else {
		if !valid {
			klog.InfoS("Kubeconfig's client certificate is not usable and there is no --bootstrap-kubeconfig; rotation will try with it", "kubeconfig", c.Kubeconfig, "reason", why)
		}
		cfg, err := loadKubeconfig(c.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("unable to load kubeconfig: %w", err)
		}
		base = cfg
	}
	out.cluster = base

	certFile, keyFile := "", ""
	if !bootstrap {
		certFile, keyFile = base.CertFile, base.KeyFile
	}
	store, err := NewFileStore(clientPairPrefix, c.CertDir, certFile, keyFile, c.Clock)
	if err != nil {
		return nil, fmt.Errorf("unable to build the client certificate store: %w", err)
	}
	out.store = store
	mcfg := Config{
		Name:       clientPairPrefix,
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Template: func() *x509.CertificateRequest {
			return &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + c.NodeName, Organization: []string{"system:nodes"}}}
		},
		Usages:            ClientUsages,
		Store:             store,
		Rotate:            c.Rotate,
		RequestedLifetime: c.RequestedLifetime,
		WaitTimeout:       c.WaitTimeout,
		Clock:             c.Clock,
		Metrics:           out.Metrics,
	}
	if !bootstrap {
		// kubeadm's control-plane kubelet.conf embeds a pair: it is used
		// (and stored) until its replacement is issued.
		mcfg.BootstrapCertPEM, mcfg.BootstrapKeyPEM = base.CertData, base.KeyData
	}
	if !c.Rotate {
		mcfg.PendingKeyFile = filepath.Join(c.CertDir, pendingClientKey)
	}
	var current kubeclient.CertificateSigningRequestInterface
	mcfg.Requester = func(cert *tls.Certificate) (Requester, error) {
		if cert != nil {
			return Requester{CSRs: current, Credentials: "the current client certificate"}, nil
		}
		if c.BootstrapKubeconfig != "" {
			// Read again for every request: new bootstrap credentials
			// laid down on disk are used without a restart.
			return requesterFor(c.BootstrapKubeconfig, "the bootstrap kubeconfig "+c.BootstrapKubeconfig)
		}
		return requesterFor(c.Kubeconfig, "the credentials of kubeconfig "+c.Kubeconfig)
	}
	if out.Manager, err = NewManager(mcfg); err != nil {
		return nil, err
	}
	if out.Config, err = rotatingConfig(base, out.Manager); err != nil {
		return nil, err
	}
	rc, err := kubeclient.NewForConfig(out.Config)
	if err != nil {
		return nil, err
	}
	current = rc.CertificatesV1().CertificateSigningRequests()

	if bootstrap {
		if c.Rotate {
			if err := writeKubeconfig(c.Kubeconfig, base, store.CurrentPath()); err != nil {
				return nil, err
			}
		} else {
			out.kubeconfigAfterIssue = true
		}
	}
	return out, nil
}

// Rotating reports whether the certificate is renewed through CSRs
// (rotateCertificates with a manager).
func (c *Client) Rotating() bool { return c.Manager != nil && c.cfg.Rotate }

// Run keeps the client certificate valid until ctx ends (nothing to do
// without a Manager).
func (c *Client) Run(ctx context.Context) {
	if c.Manager == nil {
		return
	}
	if c.kubeconfigAfterIssue {
		go func() {
			if c.Manager.WaitForCurrent(ctx) != nil {
				return
			}
			if err := writeKubeconfig(c.cfg.Kubeconfig, c.cluster, c.store.CurrentPath()); err != nil {
				klog.ErrorS(err, "Unable to write the kubeconfig after TLS bootstrap", "path", c.cfg.Kubeconfig)
			}
		}()
	}
	c.Manager.Run(ctx)
}

// requesterFor is a CSR client authenticated by a kubeconfig file.
func requesterFor(path, what string) (Requester, error) {
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return Requester{}, fmt.Errorf("%s: %w", what, err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Requester{}, fmt.Errorf("%s: %w", what, err)
	}
	rc, err := kubeclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return Requester{}, fmt.Errorf("%s: %w", what, err)
	}
	return Requester{
		CSRs: rc.CertificatesV1().CertificateSigningRequests(), Credentials: what,
		Close: func() { utilnet.CloseIdleConnectionsFor(httpClient.Transport) },
	}, nil
}

// loadKubeconfig is the rest.Config of a kubeconfig file's current context.
func loadKubeconfig(path string) (*rest.Config, error) {
	if path == "" {
		return nil, errors.New("no kubeconfig path given")
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// kubeconfigValid reports whether the kubeconfig exists, loads, and holds
// a usable client certificate/key pair none of whose certificates has
// expired (upstream's isClientConfigStillValid); why says what is wrong.
func kubeconfigValid(path string, now time.Time) (bool, string) {
	if _, err := os.Stat(path); err != nil {
		return false, fmt.Sprintf("cannot read it: %v", err)
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return false, fmt.Sprintf("cannot load it: %v", err)
	}
	certPEM, keyPEM := cfg.CertData, cfg.KeyData
	if len(certPEM) == 0 && cfg.CertFile != "" {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return false, fmt.Sprintf("cannot read its client certificate: %v", err)
		}
	}
	if len(keyPEM) == 0 && cfg.KeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			return false, fmt.Sprintf("cannot read its client key: %v", err)
		}
	}
	if len(certPEM) == 0 {
		return false, "it holds no client certificate"
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return false, fmt.Sprintf("its client certificate/key pair is unusable: %v", err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return false, fmt.Sprintf("its client certificate cannot be parsed: %v", err)
	}
	for _, c := range certs {
		if now.After(c.NotAfter) {
			return false, fmt.Sprintf("its client certificate expired at %s", c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return true, ""
}

// writeKubeconfig writes (atomically) a kubeconfig for cluster's API server
// and CA that authenticates with the pair in pemPath, as upstream's
// writeKubeconfigFromBootstrapping.
func writeKubeconfig(path string, cluster *rest.Config, pemPath string) error {
	caFile, caData := cluster.CAFile, []byte(nil)
	if caFile == "" {
		caData = cluster.CAData
	}
	kc := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: cluster.Host, InsecureSkipTLSVerify: cluster.Insecure,
			CertificateAuthority: caFile, CertificateAuthorityData: caData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default",
		}},
		CurrentContext: "default-context",
	}
	data, err := clientcmd.Write(kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	klog.InfoS("Wrote the kubeconfig for the client certificate", "path", path, "certificate", pemPath)
	return nil
}
