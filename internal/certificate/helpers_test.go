package certificate

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// testCA signs certificates for tests.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial int64 = 100

// sign issues a certificate for the CSR valid from notBefore for lifetime.
func (ca *testCA) sign(t testing.TB, csrPEM []byte, notBefore time.Time, lifetime time.Duration, usages []x509.ExtKeyUsage) []byte {
	t.Helper()
	req, err := parseCSR(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: notBefore, NotAfter: notBefore.Add(lifetime), ExtKeyUsage: usages, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// pair issues a certificate and key in PEM for cn, valid from notBefore.
func (ca *testCA) pair(t testing.TB, cn string, notBefore time.Time, lifetime time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}},
		NotBefore: notBefore, NotAfter: notBefore.Add(lifetime), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// fakeCSRs is an in-memory certificates API with resource versions and
// watches that replay what happened since a list, so tests never race the
// list/watch hand-over. onCreate (optional) plays approver and signer.
type fakeCSRs struct {
	mu        sync.Mutex
	rv        int
	items     map[string]*certificatesv1.CertificateSigningRequest
	history   []rvEvent
	watchers  []*fakeWatcher
	creates   int
	createErr error
	onCreate  func(csr *certificatesv1.CertificateSigningRequest)
}

type rvEvent struct {
	rv int
	ev watch.Event
}

var _ CSRClient = (*fakeCSRs)(nil)

func newFakeCSRs() *fakeCSRs {
	return &fakeCSRs{items: map[string]*certificatesv1.CertificateSigningRequest{}}
}

func (f *fakeCSRs) record(t watch.EventType, csr *certificatesv1.CertificateSigningRequest) {
	f.rv++
	csr.ResourceVersion = fmt.Sprint(f.rv)
	ev := watch.Event{Type: t, Object: csr.DeepCopy()}
	f.history = append(f.history, rvEvent{f.rv, ev})
	for _, w := range f.watchers {
		w.send(ev)
	}
}

func (f *fakeCSRs) Create(_ context.Context, csr *certificatesv1.CertificateSigningRequest, _ metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	f.mu.Lock()
	f.creates++
	if f.createErr != nil {
		err := f.createErr
		f.mu.Unlock()
		return nil, err
	}
	c := csr.DeepCopy()
	if c.Name == "" {
		c.Name = fmt.Sprintf("%s%d", c.GenerateName, f.rv+1)
	}
	if _, ok := f.items[c.Name]; ok {
		f.mu.Unlock()
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, c.Name)
	}
	c.UID = types.UID("uid-" + c.Name)
	f.items[c.Name] = c
	f.record(watch.Added, c)
	out := c.DeepCopy()
	hook := f.onCreate
	f.mu.Unlock()
	if hook != nil {
		hook(out.DeepCopy())
	}
	return out, nil
}

func (f *fakeCSRs) Get(_ context.Context, name string, _ metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.items[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "certificatesigningrequests"}, name)
	}
	return c.DeepCopy(), nil
}

func nameFromSelector(sel string) string {
	s, err := fields.ParseSelector(sel)
	if err != nil {
		return ""
	}
	v, _ := s.RequiresExactMatch("metadata.name")
	return v
}

func (f *fakeCSRs) List(_ context.Context, opts metav1.ListOptions) (*certificatesv1.CertificateSigningRequestList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameFromSelector(opts.FieldSelector)
	out := &certificatesv1.CertificateSigningRequestList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(f.rv)}}
	for n, c := range f.items {
		if name == "" || n == name {
			out.Items = append(out.Items, *c.DeepCopy())
		}
	}
	return out, nil
}

func (f *fakeCSRs) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWatcher{name: nameFromSelector(opts.FieldSelector), ch: make(chan watch.Event, 100), done: make(chan struct{})}
	var from int
	fmt.Sscan(opts.ResourceVersion, &from)
	for _, h := range f.history {
		if h.rv > from {
			w.send(h.ev)
		}
	}
	f.watchers = append(f.watchers, w)
	return w, nil
}

// update applies edit to the named CSR and records a Modified event.
func (f *fakeCSRs) update(t testing.TB, name string, edit func(*certificatesv1.CertificateSigningRequest)) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.items[name]
	if !ok {
		t.Fatalf("no CSR %s", name)
	}
	edit(c)
	f.record(watch.Modified, c)
}

func (f *fakeCSRs) delete(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.items[name]
	delete(f.items, name)
	f.record(watch.Deleted, c)
}

func (f *fakeCSRs) createCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates
}

func (f *fakeCSRs) setCreateErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createErr = err
}

func approve(c *certificatesv1.CertificateSigningRequest) {
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: "True", Reason: "AutoApproved",
	})
}

// autoSign makes f approve and issue every CSR at once, valid from clk's
// now for the requested lifetime or lifetime.
func (f *fakeCSRs) autoSign(t testing.TB, ca *testCA, clk clock.PassiveClock, lifetime time.Duration) {
	f.onCreate = func(c *certificatesv1.CertificateSigningRequest) {
		d := lifetime
		if c.Spec.ExpirationSeconds != nil {
			d = time.Duration(*c.Spec.ExpirationSeconds) * time.Second
		}
		certPEM := ca.sign(t, c.Spec.Request, clk.Now(), d, nil)
		f.update(t, c.Name, func(c *certificatesv1.CertificateSigningRequest) {
			approve(c)
			c.Status.Certificate = certPEM
		})
	}
}

type fakeWatcher struct {
	name string
	ch   chan watch.Event
	once sync.Once
	done chan struct{}
}

func (w *fakeWatcher) send(ev watch.Event) {
	if c, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok && w.name != "" && c.Name != w.name {
		return
	}
	select {
	case <-w.done:
	case w.ch <- ev:
	}
}

func (w *fakeWatcher) Stop()                          { w.once.Do(func() { close(w.done) }) }
func (w *fakeWatcher) ResultChan() <-chan watch.Event { return w.ch }

// waitFor polls cond in real time (the code under test runs in other
// goroutines) and fails after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// blocked waits until the goroutines under test wait on the fake clock.
func blocked(t testing.TB, clk *testingclock.FakeClock) {
	t.Helper()
	waitFor(t, "a goroutine to wait on the fake clock", clk.HasWaiters)
}

func leafOf(t testing.TB, c *tls.Certificate) *x509.Certificate {
	t.Helper()
	if c == nil {
		t.Fatal("no certificate")
	}
	if c.Leaf != nil {
		return c.Leaf
	}
	l, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
