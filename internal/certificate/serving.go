package certificate

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	netutils "k8s.io/utils/net"
)

// Upstream's names in --cert-dir for the serving certificate.
const (
	// servingPairPrefix names requested serving pairs:
	// kubelet-server-<ts>.pem and kubelet-server-current.pem.
	servingPairPrefix = "kubelet-server"
	// selfSignedCert and selfSignedKey are the self-signed fallback.
	selfSignedCert = "kubelet.crt"
	selfSignedKey  = "kubelet.key"
)

// FileRefreshPeriod is how often tlsCertFile/tlsPrivateKeyFile are read
// again even without a file event (upstream's dynamic certificate
// content resyncs every minute).
const FileRefreshPeriod = time.Minute

// ServingConfig configures NewServing.
type ServingConfig struct {
	// CertFile and KeyFile are tlsCertFile and tlsPrivateKeyFile.
	CertFile, KeyFile string
	// CertDir is --cert-dir.
	CertDir string
	// Bootstrap is serverTLSBootstrap (--rotate-server-certificates).
	Bootstrap bool
	// NodeName is the requested certificate's identity
	// (system:node:<NodeName>) and the self-signed certificate's host.
	NodeName string
	// Addresses returns the node's addresses, the requested SANs.
	Addresses func() []v1.NodeAddress
	// CSRs, nil in standalone mode, requests serving certificates.
	CSRs CSRClient
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// Serving provides the kubelet API's certificate, chosen as upstream:
//   - serverTLSBootstrap: requested from the API (signer
//     kubernetes.io/kubelet-serving, SANs = the node's addresses) and
//     rotated; tlsCertFile/tlsPrivateKeyFile, when set, serve until then;
//   - tlsCertFile and tlsPrivateKeyFile: read, and read again when they
//     change on disk;
//   - neither: a self-signed CA and a leaf for the node's hostname in
//     <cert-dir>/kubelet.crt (leaf then CA) and kubelet.key, generated
//     once, then read like the files above.
type Serving struct {
	manager *Manager
	files   *fileCertificate
	metrics *Metrics
}

// NewServing sets up the serving certificate (generating the self-signed
// pair when needed).
func NewServing(cfg ServingConfig) (*Serving, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Bootstrap {
		store, err := NewFileStore(servingPairPrefix, cfg.CertDir, cfg.CertFile, cfg.KeyFile, cfg.Clock)
		if err != nil {
			return nil, fmt.Errorf("failed to initialize server certificate store: %w", err)
		}
		s := &Serving{metrics: NewServerMetrics()}
		mcfg := Config{
			Name:            servingPairPrefix,
			SignerName:      certificatesv1.KubeletServingSignerName,
			Template:        servingTemplate(cfg.NodeName, cfg.Addresses),
			DynamicTemplate: true,
			Usages:          ServingUsages,
			Store:           store,
			Rotate:          true,
			Clock:           cfg.Clock,
			Metrics:         s.metrics,
		}
		if cfg.CSRs != nil {
			csrs := cfg.CSRs
			mcfg.Requester = func(*tls.Certificate) (Requester, error) {
				return Requester{CSRs: csrs, Credentials: "the kubelet's client credentials"}, nil
			}
		}
		if s.manager, err = NewManager(mcfg); err != nil {
			return nil, fmt.Errorf("failed to initialize server certificate manager: %w", err)
		}
		return s, nil
	}
	certFile, keyFile := cfg.CertFile, cfg.KeyFile
	if certFile == "" && keyFile == "" {
		certFile, keyFile = filepath.Join(cfg.CertDir, selfSignedCert), filepath.Join(cfg.CertDir, selfSignedKey)
		if err := ensureSelfSigned(certFile, keyFile, cfg.NodeName); err != nil {
			return nil, err
		}
	}
	files, err := newFileCertificate(certFile, keyFile, cfg.Clock)
	if err != nil {
		return nil, err
	}
	return &Serving{files: files}, nil
}

// GetCertificate is the TLS server's tls.Config.GetCertificate.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current(); c != nil {
		return c, nil
	}
	return nil, errors.New("no serving certificate available for the kubelet")
}

func (s *Serving) current() *tls.Certificate {
	if s.manager != nil {
		return s.manager.Current()
	}
	return s.files.current.Load()
}

// Manager is the serving certificate's manager (serverTLSBootstrap), nil
// otherwise.
func (s *Serving) Manager() *Manager { return s.manager }

// Run requests and rotates, or watches the files, until ctx ends.
func (s *Serving) Run(ctx context.Context) {
	if s.manager != nil {
		s.manager.Run(ctx)
		return
	}
	s.files.run(ctx)
}

// Collectors are the serving certificate's metrics (serverTLSBootstrap
// only, as upstream).
func (s *Serving) Collectors() []prometheus.Collector {
	if s.manager == nil {
		return nil
	}
	return s.metrics.Collectors(s.manager)
}

// servingTemplate asks for system:node:<name> in system:nodes with the
// node's addresses as SANs; nil until the node has an IP address (as
// upstream without the AllowDNSOnlyNodeCSR gate).
func servingTemplate(nodeName string, addresses func() []v1.NodeAddress) func() *x509.CertificateRequest {
	return func() *x509.CertificateRequest {
		var addrs []v1.NodeAddress
		if addresses != nil {
			addrs = addresses()
		}
		dnsNames, ips := hostnamesAndIPs(addrs)
		if len(ips) == 0 {
			return nil
		}
		return &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
			DNSNames:    dnsNames,
			IPAddresses: ips,
		}
	}
}

// hostnamesAndIPs are upstream's SANs for node addresses: Hostname (a name
// or an IP), Internal/ExternalIP and Internal/ExternalDNS, deduplicated
// and sorted.
func hostnamesAndIPs(addrs []v1.NodeAddress) ([]string, []net.IP) {
	names, ips := map[string]bool{}, map[string]bool{}
	for _, a := range addrs {
		if a.Address == "" {
			continue
		}
		switch a.Type {
		case v1.NodeHostName:
			if netutils.ParseIPSloppy(a.Address) != nil {
				ips[a.Address] = true
			} else {
				names[a.Address] = true
			}
		case v1.NodeExternalIP, v1.NodeInternalIP:
			if netutils.ParseIPSloppy(a.Address) != nil {
				ips[a.Address] = true
			}
		case v1.NodeExternalDNS, v1.NodeInternalDNS:
			names[a.Address] = true
		}
	}
	var dnsNames []string
	for n := range names {
		dnsNames = append(dnsNames, n)
	}
	sort.Strings(dnsNames)
	var out []net.IP
	for ip := range ips {
		out = append(out, netutils.ParseIPSloppy(ip))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return dnsNames, out
}

// ensureSelfSigned generates upstream's self-signed pair when neither file
// can be read: a CA "<host>-ca@<unix time>" and a leaf "<host>@<unix
// time>" for host signed by it, the leaf then the CA in certFile.
func ensureSelfSigned(certFile, keyFile, host string) error {
	ok, err := certutil.CanReadCertAndKey(certFile, keyFile)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return fmt.Errorf("unable to generate self signed cert: %w", err)
	}
	// The key first: a crash in between leaves no certificate without it.
	if err := atomicfile.Write(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	if err := atomicfile.Write(certFile, certPEM, 0o644); err != nil {
		return err
	}
	klog.InfoS("Generated a self-signed serving certificate", "certFile", certFile, "keyFile", keyFile)
	return nil
}

// fileCertificate serves a certificate/key file pair and loads it again
// when either file changes (fsnotify on their directories, so that files
// replaced by rename are seen too, plus a reread every FileRefreshPeriod).
// A pair that does not load (a half-written update) keeps the previous one
// in use.
type fileCertificate struct {
	certFile, keyFile string
	clock             clock.WithTicker
	current           atomic.Pointer[tls.Certificate]
	// last holds the bytes behind current (owned by the run goroutine).
	lastCert, lastKey []byte
}

func newFileCertificate(certFile, keyFile string, clk clock.WithTicker) (*fileCertificate, error) {
	f := &fileCertificate{certFile: certFile, keyFile: keyFile, clock: clk}
	if err := f.load(); err != nil {
		return nil, fmt.Errorf("unable to load the kubelet serving certificate: %w", err)
	}
	return f, nil
}

// load reads both files and switches to them when they changed and form a
// valid pair.
func (f *fileCertificate) load() error {
	certPEM, err := os.ReadFile(f.certFile)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(f.keyFile)
	if err != nil {
		return err
	}
	if bytes.Equal(certPEM, f.lastCert) && bytes.Equal(keyPEM, f.lastKey) {
		return nil
	}
	if _, err := keyutil.ParsePrivateKeyPEM(keyPEM); err != nil {
		return fmt.Errorf("%s: %w", f.keyFile, err)
	}
	pair, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%s / %s: %w", f.certFile, f.keyFile, err)
	}
	first := f.lastCert == nil
	f.current.Store(pair)
	f.lastCert, f.lastKey = certPEM, keyPEM
	if !first {
		klog.InfoS("Loaded a new kubelet serving certificate", "certFile", f.certFile, "keyFile", f.keyFile,
			"subject", pair.Leaf.Subject.String(), "notAfter", pair.Leaf.NotAfter)
	}
	return nil
}

func (f *fileCertificate) reload() {
	if err := f.load(); err != nil {
		klog.ErrorS(err, "Cannot load the kubelet serving certificate; keeping the current one", "certFile", f.certFile, "keyFile", f.keyFile)
	}
}

func (f *fileCertificate) run(ctx context.Context) {
	var events <-chan fsnotify.Event
	w, err := fsnotify.NewWatcher()
	if err != nil {
		klog.ErrorS(err, "Cannot watch the serving certificate files; rereading them every minute", "certFile", f.certFile)
	} else {
		defer w.Close()
		for _, dir := range []string{filepath.Dir(f.certFile), filepath.Dir(f.keyFile)} {
			if err := w.Add(dir); err != nil {
				klog.ErrorS(err, "Cannot watch a serving certificate directory; rereading it every minute", "dir", dir)
			}
		}
		events = w.Events
		go func() {
			for err := range w.Errors {
				klog.V(2).InfoS("Serving certificate watch error", "err", err)
			}
		}()
	}
	t := f.clock.NewTicker(FileRefreshPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if name := filepath.Clean(ev.Name); name == filepath.Clean(f.certFile) || name == filepath.Clean(f.keyFile) {
				f.reload()
			}
		case <-t.C():
			f.reload()
		}
	}
}
