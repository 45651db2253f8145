package certificate

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultWaitTimeout is how long one request waits for its CSR to be
// approved and issued before it is retried (upstream's
// certificateWaitTimeout).
const DefaultWaitTimeout = 15 * time.Minute

// errNoTemplate: there is nothing to request yet (a serving certificate
// before the node knows its addresses).
var errNoTemplate = errors.New("no certificate template yet")

// Requester is what one request talks to the API with.
type Requester struct {
	// CSRs is the certificates API.
	CSRs CSRClient
	// Credentials names them in errors ("the bootstrap kubeconfig
	// /etc/kubernetes/bootstrap-kubelet.conf", "the current client
	// certificate").
	Credentials string
	// Close, optional, releases the client's connections.
	Close func()
}

// Config configures a Manager.
type Config struct {
	// Name names the certificate in logs and errors (kubelet-client,
	// kubelet-server).
	Name string
	// SignerName is the CSR's spec.signerName (required).
	SignerName string
	// Template returns the request to make (required); nil means not yet.
	Template func() *x509.CertificateRequest
	// DynamicTemplate: Template changes over time (the node's addresses);
	// it is checked every second and a certificate that no longer
	// satisfies it is replaced at once, as upstream.
	DynamicTemplate bool
	// Usages returns the CSR's key usages for a key (required).
	Usages func(key any) []certificatesv1.KeyUsage
	// Store keeps the pairs (required).
	Store Store
	// Requester returns the API to request with, given the current
	// certificate (nil when none is valid). Nil: the manager serves what
	// the store holds and never requests.
	Requester func(current *tls.Certificate) (Requester, error)
	// Rotate renews the certificate at 70-90 % of its lifetime; without it
	// only a missing, expired or template-violating certificate is
	// requested (TLS bootstrap without rotation).
	Rotate bool
	// BootstrapCertPEM and BootstrapKeyPEM, optional, are a pair to use
	// (and store) while the store has none; it is replaced at once
	// (kubeadm's control-plane kubelet.conf carries such a pair).
	BootstrapCertPEM, BootstrapKeyPEM []byte
	// PendingKeyFile, optional, keeps the key of a request until its
	// certificate is issued, and names requests node-csr-<digest>: a
	// restarted kubelet asks again with the same key and finds its earlier
	// CSR (upstream's bootstrap without rotation). Without it every request
	// has a fresh key and a generated name.
	PendingKeyFile string
	// RequestedLifetime, optional, sets spec.expirationSeconds.
	RequestedLifetime *time.Duration
	// WaitTimeout bounds one wait for approval and issuance
	// (DefaultWaitTimeout when zero).
	WaitTimeout time.Duration
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Rand returns a number in [0, 1) for jitter (math/rand when nil).
	Rand func() float64
	// Metrics, optional, counts failures and rotations.
	Metrics *Metrics
}

// Manager holds one certificate and keeps it valid: it requests a new one
// through the certificates API when there is none, when it no longer
// matches its template and, with rotation, at a jittered 70-90 % of its
// lifetime; a failed request keeps the current certificate and is retried
// with back-off.
type Manager struct {
	cfg   Config
	clock clock.WithTicker

	mu            sync.RWMutex
	cert          *tls.Certificate
	jitter        float64 // drawn per certificate: where in 70-90 % it rotates
	lastRequested *x509.CertificateRequest
	changed       chan struct{} // closed and replaced on every new certificate
	onChange      []func()

	// force requests at once (no certificate, or a bootstrap one). Owned
	// by the Run goroutine after construction.
	force bool
}

// NewManager loads the store's current pair, or the bootstrap pair when
// the store has no valid one.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.SignerName == "" || cfg.Template == nil || cfg.Usages == nil || cfg.Store == nil {
		return nil, errors.New("certificate.NewManager: SignerName, Template, Usages and Store are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = mathrand.Float64
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = DefaultWaitTimeout
	}
	if cfg.Name == "" {
		cfg.Name = cfg.SignerName
	}
	m := &Manager{cfg: cfg, clock: cfg.Clock, changed: make(chan struct{})}
	cert, err := cfg.Store.Current()
	switch {
	case err == nil && m.valid(cert):
		m.cert = cert
	case err != nil && !errors.Is(err, ErrNoCertificate):
		// An unreadable pair is replaced like a missing one.
		klog.ErrorS(err, "Current certificate is unusable, requesting a new one", "certificate", cfg.Name)
		fallthrough
	default:
		m.force = true
		if cfg.BootstrapCertPEM != nil && cfg.BootstrapKeyPEM != nil {
			boot, err := parsePair(cfg.BootstrapCertPEM, cfg.BootstrapKeyPEM)
			if err != nil {
				return nil, fmt.Errorf("%s: bootstrap certificate: %w", cfg.Name, err)
			}
			if stored, err := cfg.Store.Update(cfg.BootstrapCertPEM, cfg.BootstrapKeyPEM); err != nil {
				klog.ErrorS(err, "Unable to store the bootstrap certificate", "certificate", cfg.Name)
			} else {
				boot = stored
			}
			m.cert = boot
		}
	}
	m.jitter = cfg.Rand()
	return m, nil
}

func (m *Manager) valid(c *tls.Certificate) bool {
	return c != nil && c.Leaf != nil && !m.clock.Now().After(c.Leaf.NotAfter)
}

// Current returns the certificate in use, nil when there is none or it has
// expired.
func (m *Manager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.cert == nil || !m.valid(m.cert) {
		return nil
	}
	return m.cert
}

// OnChange registers fn to run whenever the certificate changes, before
// requests waiting in WaitForCurrent are released. fn must not block.
func (m *Manager) OnChange(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onChange = append(m.onChange, fn)
}

// WaitForCurrent returns once there is a valid certificate, or ctx's error.
func (m *Manager) WaitForCurrent(ctx context.Context) error {
	for {
		m.mu.RLock()
		ok, changed := m.cert != nil && m.valid(m.cert), m.changed
		m.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

func (m *Manager) setCurrent(cert *tls.Certificate) {
	m.mu.Lock()
	old := m.cert
	m.cert = cert
	m.jitter = m.cfg.Rand()
	hooks := slices.Clone(m.onChange)
	changed := m.changed
	m.changed = make(chan struct{})
	m.mu.Unlock()
	// Hooks first (connections made with the old certificate are closed),
	// then the waiters go.
	for _, fn := range hooks {
		fn()
	}
	close(changed)
	if old != nil && old.Leaf != nil {
		m.cfg.Metrics.observeRotation(m.clock.Since(old.Leaf.NotBefore))
	}
}

// Run keeps the certificate valid until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.Requester == nil {
		klog.V(2).InfoS("Certificate rotation is not enabled, no connection to the API server", "certificate", m.cfg.Name)
		return
	}
	klog.V(2).InfoS("Certificate rotation is enabled", "certificate", m.cfg.Name, "rotate", m.cfg.Rotate)
	var tick <-chan time.Time
	if m.cfg.DynamicTemplate {
		t := m.clock.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C()
	}
	for ctx.Err() == nil {
		deadline := m.nextDeadline()
		if d := deadline.Sub(m.clock.Now()); d > 0 {
			klog.V(2).InfoS("Waiting for the next certificate rotation", "certificate", m.cfg.Name, "deadline", deadline, "sleep", d)
			if !m.sleepUntil(ctx, d, tick) {
				return
			}
		}
		if m.cfg.Template() == nil {
			// Nothing to ask for yet: wait for the template.
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
			continue
		}
		m.rotateWithRetry(ctx)
	}
}

// nextDeadline is when the current certificate should be replaced.
func (m *Manager) nextDeadline() time.Time {
	now := m.clock.Now()
	if m.force {
		m.force = false
		return now
	}
	leaf, jitter, _ := m.snapshot()
	return rotationDeadline(now, leaf, satisfies(leaf, m.cfg.Template()), m.cfg.Rotate, jitter)
}

// snapshot is the current certificate's leaf (nil without one), its
// jitter and the template last requested.
func (m *Manager) snapshot() (*x509.Certificate, float64, *x509.CertificateRequest) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var leaf *x509.Certificate
	if m.cert != nil {
		leaf = m.cert.Leaf
	}
	return leaf, m.jitter, m.lastRequested
}

// rotationDeadline decides when a certificate is replaced: now when there
// is none or it does not satisfy the template; with rotation at
// NotBefore + (70 + 20*jitter) % of its lifetime (upstream's
// jitteryDuration, jitter in [0, 1)); without rotation when it expires.
func rotationDeadline(now time.Time, leaf *x509.Certificate, satisfied, rotate bool, jitter float64) time.Time {
	if leaf == nil || !satisfied {
		return now
	}
	if !rotate {
		return leaf.NotAfter
	}
	total := leaf.NotAfter.Sub(leaf.NotBefore)
	return leaf.NotBefore.Add(time.Duration(float64(total) * (0.7 + 0.2*jitter)))
}

// retryDelay is the wait after the attempt-th failure in a row, as
// upstream's back-off: 2 s doubling (+ up to 10 % jitter) for four
// failures, then every 32 s.
func retryDelay(attempt int, jitter float64) time.Duration {
	if attempt >= 5 {
		return 32 * time.Second
	}
	base := 2 * time.Second << (attempt - 1)
	return base + time.Duration(float64(base)*0.1*jitter)
}

// sleepUntil waits d; with a dynamic template it wakes early when the
// template asks for something the certificate lacks and that was not
// requested yet. It returns false when ctx ends.
func (m *Manager) sleepUntil(ctx context.Context, d time.Duration, tick <-chan time.Time) bool {
	t := m.clock.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
			return true
		case <-tick:
			if m.templateChanged() {
				klog.V(2).InfoS("Certificate template changed, rotating", "certificate", m.cfg.Name)
				return true
			}
		}
	}
}

func (m *Manager) templateChanged() bool {
	tmpl := m.cfg.Template()
	if tmpl == nil {
		return false
	}
	leaf, _, last := m.snapshot()
	return !satisfies(leaf, tmpl) && !reflect.DeepEqual(tmpl, last)
}

// rotateWithRetry requests until it gets a certificate or ctx ends.
func (m *Manager) rotateWithRetry(ctx context.Context) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := m.rotate(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		if errors.Is(err, errNoTemplate) {
			return
		}
		m.cfg.Metrics.renewFailed()
		delay := retryDelay(attempt, m.cfg.Rand())
		klog.ErrorS(err, "Certificate request failed; keeping the current certificate and retrying", "certificate", m.cfg.Name,
			"attempt", attempt, "retryAfter", delay, "haveValidCertificate", m.Current() != nil)
		t := m.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// rotate makes one request: a key, a CSR, the wait for it to be issued,
// the new pair stored and put in use.
func (m *Manager) rotate(ctx context.Context) error {
	tmpl := m.cfg.Template()
	if tmpl == nil {
		return errNoTemplate
	}
	key, keyPEM, err := m.newKey()
	if err != nil {
		return fmt.Errorf("unable to generate a private key: %w", err)
	}
	csrPEM, err := certutil.MakeCSRFromTemplate(key, tmpl)
	if err != nil {
		return fmt.Errorf("unable to create a certificate signing request: %w", err)
	}
	usages := m.cfg.Usages(key)
	name := ""
	if m.cfg.PendingKeyFile != "" {
		if name, err = digestedName(key.Public(), &tmpl.Subject, usages); err != nil {
			return err
		}
	}
	req, err := m.cfg.Requester(m.Current())
	if err != nil {
		return fmt.Errorf("no client to request a certificate with: %w", err)
	}
	if req.Close != nil {
		defer req.Close()
	}
	klog.V(2).InfoS("Requesting a certificate", "certificate", m.cfg.Name, "signerName", m.cfg.SignerName, "commonName", tmpl.Subject.CommonName, "credentials", req.Credentials)
	csrName, uid, err := requestCertificate(ctx, req.CSRs, m.clock.Now(), csrPEM, name, m.cfg.SignerName, m.cfg.RequestedLifetime, usages, key)
	if err != nil {
		return fmt.Errorf("%w (credentials: %s)", err, req.Credentials)
	}
	m.mu.Lock()
	m.lastRequested = tmpl
	m.mu.Unlock()
	certPEM, err := waitForCertificate(ctx, req.CSRs, m.clock, csrName, uid, m.cfg.WaitTimeout)
	if err != nil {
		return err
	}
	cert, err := m.cfg.Store.Update(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("unable to store the certificate of %s: %w", csrName, err)
	}
	if m.cfg.PendingKeyFile != "" {
		if err := os.Remove(m.cfg.PendingKeyFile); err != nil && !os.IsNotExist(err) {
			klog.V(2).InfoS("Failed cleaning up the pending private key", "path", m.cfg.PendingKeyFile, "err", err)
		}
	}
	m.setCurrent(cert)
	klog.InfoS("Certificate issued and in use", "certificate", m.cfg.Name, "csr", csrName,
		"notAfter", cert.Leaf.NotAfter, "subject", cert.Leaf.Subject.String())
	return nil
}

// newKey returns an ECDSA P-256 key (upstream's choice) in PEM: the
// pending key when PendingKeyFile holds one, else a fresh one (saved
// there first, when set).
func (m *Manager) newKey() (crypto.Signer, []byte, error) {
	if path := m.cfg.PendingKeyFile; path != "" {
		if data, err := os.ReadFile(path); err == nil {
			if k, err := keyutil.ParsePrivateKeyPEM(data); err == nil {
				if signer, ok := k.(crypto.Signer); ok {
					return signer, data, nil
				}
			}
			klog.InfoS("Pending private key is unusable, making a new one", "path", path)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: der})
	if path := m.cfg.PendingKeyFile; path != "" {
		if err := atomicfile.Write(path, keyPEM, 0o600); err != nil {
			return nil, nil, fmt.Errorf("save the pending private key: %w", err)
		}
	}
	return key, keyPEM, nil
}

// satisfies reports whether a certificate has what the template asks for
// (common name, and every DNS name, IP and organization); extras do not
// matter. A nil template is satisfied by any certificate.
func satisfies(leaf *x509.Certificate, tmpl *x509.CertificateRequest) bool {
	if leaf == nil {
		return false
	}
	if tmpl == nil {
		return true
	}
	if tmpl.Subject.CommonName != leaf.Subject.CommonName {
		return false
	}
	if !sets.New(leaf.DNSNames...).IsSuperset(sets.New(tmpl.DNSNames...)) {
		return false
	}
	have := sets.New[string]()
	for _, ip := range leaf.IPAddresses {
		have.Insert(ip.String())
	}
	for _, ip := range tmpl.IPAddresses {
		if !have.Has(ip.String()) {
			return false
		}
	}
	return sets.New(leaf.Subject.Organization...).IsSuperset(sets.New(tmpl.Subject.Organization...))
}

// parsePair parses a PEM certificate/key pair with its leaf.
func parsePair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &cert, nil
}

// ClientUsages are upstream's key usages for a kubelet client certificate:
// digital signature and client auth, plus key encipherment for RSA keys.
func ClientUsages(key any) []certificatesv1.KeyUsage {
	if _, ok := key.(*rsa.PrivateKey); ok {
		return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	}
	return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
}

// ServingUsages are upstream's key usages for a kubelet serving
// certificate: digital signature and server auth, plus key encipherment
// for RSA keys.
func ServingUsages(key any) []certificatesv1.KeyUsage {
	if _, ok := key.(*rsa.PrivateKey); ok {
		return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	}
	return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
}
