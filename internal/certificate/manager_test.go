package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	certificatesv1 "k8s.io/api/certificates/v1"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// TestRotationDeadline pins upstream's schedule: jitteryDuration puts the
// deadline at 70-90 % of the lifetime, a certificate that does not match
// the template (or none) is replaced at once, and without rotation only an
// expired one is.
func TestRotationDeadline(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	leaf := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(100 * time.Hour)}
	year := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(365 * 24 * time.Hour)}
	cases := []struct {
		name      string
		leaf      *x509.Certificate
		satisfied bool
		rotate    bool
		jitter    float64
		want      time.Time
	}{
		{"no certificate", nil, false, true, 0.5, now},
		{"template not satisfied", leaf, false, true, 0.5, now},
		{"jitter 0: 70 %", leaf, true, true, 0, t0.Add(70 * time.Hour)},
		{"jitter 0.5: 80 %", leaf, true, true, 0.5, t0.Add(80 * time.Hour)},
		{"jitter near 1: just under 90 %", leaf, true, true, 0.999, t0.Add(time.Duration(0.8998 * float64(100*time.Hour)))},
		{"kubeadm's one-year certificate at 80 %", year, true, true, 0.5, t0.Add(time.Duration(0.8 * float64(365*24*time.Hour)))},
		{"without rotation: at expiry", leaf, true, false, 0.5, t0.Add(100 * time.Hour)},
		{"without rotation, no certificate: now", nil, false, false, 0.5, now},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Float arithmetic, as upstream's: within a microsecond.
			if got := rotationDeadline(now, tc.leaf, tc.satisfied, tc.rotate, tc.jitter); got.Sub(tc.want).Abs() > time.Microsecond {
				t.Errorf("deadline %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{1, 0, 2 * time.Second}, {2, 0, 4 * time.Second}, {3, 0, 8 * time.Second}, {4, 0, 16 * time.Second},
		{1, 1, 2200 * time.Millisecond}, {4, 0.5, 16800 * time.Millisecond},
		{5, 0.5, 32 * time.Second}, {50, 1, 32 * time.Second},
	} {
		if got := retryDelay(tc.attempt, tc.jitter); got != tc.want {
			t.Errorf("retryDelay(%d, %v) = %v, want %v", tc.attempt, tc.jitter, got, tc.want)
		}
	}
}

func TestSatisfies(t *testing.T) {
	leaf := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes", "extra"}},
		DNSNames:    []string{"a", "a.example"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("fd00::1")},
	}
	tmpl := func(edit func(*x509.CertificateRequest)) *x509.CertificateRequest {
		r := &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}},
			DNSNames:    []string{"a"},
			IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
		}
		if edit != nil {
			edit(r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		leaf *x509.Certificate
		tmpl *x509.CertificateRequest
		want bool
	}{
		{"subset of everything", leaf, tmpl(nil), true},
		{"no template", leaf, nil, true},
		{"no certificate", nil, tmpl(nil), false},
		{"other CN", leaf, tmpl(func(r *x509.CertificateRequest) { r.Subject.CommonName = "system:node:b" }), false},
		{"new DNS name", leaf, tmpl(func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, "b") }), false},
		{"new IP", leaf, tmpl(func(r *x509.CertificateRequest) { r.IPAddresses = append(r.IPAddresses, net.ParseIP("10.0.0.2")) }), false},
		{"IPv6 in another spelling", leaf, tmpl(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("fd00:0::1")} }), true},
		{"new organization", leaf, tmpl(func(r *x509.CertificateRequest) { r.Subject.Organization = []string{"other"} }), false},
	} {
		if got := satisfies(tc.leaf, tc.tmpl); got != tc.want {
			t.Errorf("%s: satisfies = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// rig is a client certificate manager on a fake clock against the fake
// certificates API.
type rig struct {
	t     *testing.T
	clk   *testingclock.FakeClock
	api   *fakeCSRs
	ca    *testCA
	store *FileStore
	dir   string
	m     *Manager
}

func newRig(t *testing.T, edit func(*Config)) *rig {
	t.Helper()
	r := &rig{t: t, clk: testingclock.NewFakeClock(t0), api: newFakeCSRs(), ca: newTestCA(t), dir: t.TempDir()}
	var err error
	if r.store, err = NewFileStore("kubelet-client", r.dir, "", "", r.clk); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Name: "kubelet-client", SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Template: func() *x509.CertificateRequest {
			return &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}
		},
		Usages: ClientUsages, Store: r.store, Rotate: true, Clock: r.clk,
		Rand:      func() float64 { return 0.5 },
		Metrics:   NewClientMetrics(),
		Requester: func(*tls.Certificate) (Requester, error) { return Requester{CSRs: r.api, Credentials: "test"}, nil },
	}
	if edit != nil {
		edit(&cfg)
	}
	if r.m, err = NewManager(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.m.Run(ctx)
	}()
	r.t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (r *rig) current() *x509.Certificate {
	r.t.Helper()
	c := r.m.Current()
	if c == nil {
		return nil
	}
	return leafOf(r.t, c)
}

func (r *rig) creates(n int) {
	r.t.Helper()
	waitFor(r.t, "CSR creations", func() bool { return r.api.createCount() >= n })
	if got := r.api.createCount(); got != n {
		r.t.Fatalf("%d CSRs created, want %d", got, n)
	}
}

// failed waits until n requests have failed and the manager sleeps its
// back-off (a wait for a CSR has its own timer: only after a failure is
// counted is the retry timer the one to step).
func (r *rig) failed(n int) {
	r.t.Helper()
	waitFor(r.t, "failed requests", func() bool { return testutil.ToFloat64(r.m.cfg.Metrics.renewErrors) >= float64(n) })
	if got := testutil.ToFloat64(r.m.cfg.Metrics.renewErrors); got != float64(n) {
		r.t.Fatalf("%v failed requests, want %d", got, n)
	}
	blocked(r.t, r.clk)
}

func (r *rig) pairsOnDisk() int {
	m, _ := filepath.Glob(filepath.Join(r.dir, "kubelet-client-2*.pem"))
	return len(m)
}

// TestManagerRotatesOnScheduleAndKeepsTheOldCertificateWhileTheAPIIsDown
// steps a fake clock through a certificate's life: the first certificate
// is requested at once, the next one exactly at 80 % (jitter 0.5) of the
// lifetime and not a moment earlier; with the API down the old
// certificate stays in use and on disk while requests are retried after
// 2, 4, 8, 16 s (+5 % jitter) and then every 32 s; once the API is back
// the new certificate replaces it without losing the old file.
func TestManagerRotatesOnScheduleAndKeepsTheOldCertificateWhileTheAPIIsDown(t *testing.T) {
	r := newRig(t, nil)
	r.api.autoSign(t, r.ca, r.clk, time.Hour)
	if r.m.Current() != nil {
		t.Fatal("a certificate before any was issued")
	}
	changes := make(chan struct{}, 10)
	r.m.OnChange(func() { changes <- struct{}{} })
	r.run()
	r.creates(1)
	waitFor(t, "the first certificate", func() bool { return r.m.Current() != nil })
	<-changes
	first := r.current()
	if first.Subject.CommonName != "system:node:n1" || !first.NotBefore.Equal(t0) {
		t.Fatalf("first certificate %v from %v", first.Subject, first.NotBefore)
	}

	// Asleep until 48 min (80 % of 1 h).
	blocked(t, r.clk)
	r.clk.Step(48*time.Minute - time.Second)
	if !r.clk.HasWaiters() {
		t.Fatal("the manager woke before its deadline")
	}
	r.creates(1)

	// The API server is down at the deadline.
	r.api.setCreateErr(errors.New("connection refused"))
	r.clk.Step(time.Second)
	r.creates(2)
	for i, delay := range []time.Duration{2100 * time.Millisecond, 4200 * time.Millisecond, 8400 * time.Millisecond, 16800 * time.Millisecond, 32 * time.Second, 32 * time.Second} {
		r.failed(i + 1)
		if cur := r.current(); cur == nil || cur.SerialNumber.Cmp(first.SerialNumber) != 0 {
			t.Fatalf("retry %d: the old certificate is not in use", i+1)
		}
		r.clk.Step(delay - time.Millisecond)
		if !r.clk.HasWaiters() {
			t.Fatalf("retry %d came before %v", i+1, delay)
		}
		r.creates(2 + i)
		r.clk.Step(time.Millisecond)
		r.creates(3 + i)
	}
	if target, _ := os.Readlink(r.store.CurrentPath()); target == "" || r.pairsOnDisk() != 1 {
		t.Fatalf("with the API down: link %q, %d pairs on disk; want the first one kept", target, r.pairsOnDisk())
	}

	// The API is back: the next retry gets the new certificate.
	r.api.setCreateErr(nil)
	r.failed(7)
	r.clk.Step(32 * time.Second)
	r.creates(9)
	waitFor(t, "the rotated certificate", func() bool {
		cur := r.current()
		return cur != nil && cur.SerialNumber.Cmp(first.SerialNumber) != 0
	})
	<-changes
	if r.pairsOnDisk() != 2 {
		t.Fatalf("%d pairs on disk after rotation, want both", r.pairsOnDisk())
	}
	second := r.current()
	// The next deadline is 80 % into the new certificate's life.
	blocked(t, r.clk)
	r.clk.Step(second.NotAfter.Sub(second.NotBefore)*8/10 - time.Second)
	if !r.clk.HasWaiters() {
		t.Fatal("woke before the second deadline")
	}
	r.creates(9)
}

// TestManagerBootstrapPairIsStoredAndReplacedAtOnce: kubeadm's control
// plane hands the kubelet a kubeconfig with an embedded pair; it is used
// and written to the cert dir at once (kubeadm's kubelet-finalize looks
// for kubelet-client-current.pem), and replaced by a requested one.
func TestManagerBootstrapPairIsStoredAndReplacedAtOnce(t *testing.T) {
	ca := newTestCA(t)
	bootCert, bootKey := ca.pair(t, "system:node:n1", t0.Add(-time.Hour), 365*24*time.Hour)
	r := newRig(t, func(c *Config) { c.BootstrapCertPEM, c.BootstrapKeyPEM = bootCert, bootKey })
	boot := r.current()
	if boot == nil || r.pairsOnDisk() != 1 {
		t.Fatalf("bootstrap pair in use %v, %d pairs on disk", boot, r.pairsOnDisk())
	}
	r.api.autoSign(t, r.ca, r.clk, time.Hour)
	r.run()
	r.creates(1)
	waitFor(t, "the requested certificate", func() bool {
		cur := r.current()
		return cur != nil && cur.SerialNumber.Cmp(boot.SerialNumber) != 0
	})
}

// TestManagerWithoutRotationOnlyReplacesAnExpiredCertificate: TLS
// bootstrap without rotateCertificates requests once, with a key kept in
// kubelet-client.key.tmp until issuance and a node-csr-<digest> name.
func TestManagerWithoutRotationOnlyReplacesAnExpiredCertificate(t *testing.T) {
	var pending string
	r := newRig(t, func(c *Config) {
		c.Rotate = false
		pending = filepath.Join(t.TempDir(), "kubelet-client.key.tmp")
		c.PendingKeyFile = pending
	})
	r.api.setCreateErr(errors.New("connection refused"))
	r.run()
	r.creates(1)
	r.failed(1)
	keyBefore, err := os.ReadFile(pending)
	if err != nil {
		t.Fatalf("pending key not kept after a failed request: %v", err)
	}
	r.api.setCreateErr(nil)
	var name string
	r.api.onCreate = func(c *certificatesv1.CertificateSigningRequest) {
		name = c.Name
		keyNow, _ := os.ReadFile(pending)
		if string(keyNow) != string(keyBefore) {
			t.Error("the retry used another key")
		}
		certPEM := r.ca.sign(t, c.Spec.Request, r.clk.Now(), time.Hour, nil)
		r.api.update(t, c.Name, func(c *certificatesv1.CertificateSigningRequest) { approve(c); c.Status.Certificate = certPEM })
	}
	r.clk.Step(retryDelay(1, 0.5))
	r.creates(2)
	waitFor(t, "the certificate", func() bool { return r.m.Current() != nil })
	if len(name) < len("node-csr-") || name[:9] != "node-csr-" {
		t.Errorf("CSR name %q, want node-csr-<digest>", name)
	}
	if _, err := os.Stat(pending); !os.IsNotExist(err) {
		t.Errorf("pending key still there after issuance: %v", err)
	}
	// No rotation at 80 %: asleep until expiry.
	blocked(t, r.clk)
	r.clk.Step(59 * time.Minute)
	if !r.clk.HasWaiters() {
		t.Fatal("rotated although rotation is off")
	}
	r.creates(2)
}

// TestManagerDeniedRequestIsRetriedWithAClearError: a denied CSR keeps the
// manager retrying (a fresh key and CSR each time with rotation).
func TestManagerDeniedRequestIsRetried(t *testing.T) {
	r := newRig(t, nil)
	denied := 0
	r.api.onCreate = func(c *certificatesv1.CertificateSigningRequest) {
		if denied < 2 {
			denied++
			r.api.update(t, c.Name, func(c *certificatesv1.CertificateSigningRequest) {
				c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateDenied, Status: "True", Reason: "NotAllowed"})
			})
			return
		}
		certPEM := r.ca.sign(t, c.Spec.Request, r.clk.Now(), time.Hour, nil)
		r.api.update(t, c.Name, func(c *certificatesv1.CertificateSigningRequest) { approve(c); c.Status.Certificate = certPEM })
	}
	r.run()
	r.creates(1)
	r.failed(1)
	r.clk.Step(retryDelay(1, 0.5))
	r.creates(2)
	r.failed(2)
	r.clk.Step(retryDelay(2, 0.5))
	r.creates(3)
	waitFor(t, "the certificate after two denials", func() bool { return r.m.Current() != nil })
}

// TestManagerServingTemplateChange: a serving certificate is requested once
// the node has an address, and again as soon as it gains one the
// certificate lacks.
func TestManagerServingTemplateChange(t *testing.T) {
	var addrs []string
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	getAddrs := func() []string { <-mu; defer func() { mu <- struct{}{} }(); return append([]string(nil), addrs...) }
	setAddrs := func(a ...string) { <-mu; addrs = a; mu <- struct{}{} }
	r := newRig(t, func(c *Config) {
		c.SignerName = certificatesv1.KubeletServingSignerName
		c.Usages = ServingUsages
		c.DynamicTemplate = true
		c.Template = func() *x509.CertificateRequest {
			var ips []net.IP
			for _, a := range getAddrs() {
				ips = append(ips, net.ParseIP(a))
			}
			if len(ips) == 0 {
				return nil
			}
			return &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, IPAddresses: ips}
		}
	})
	r.api.autoSign(t, r.ca, r.clk, time.Hour)
	r.run()
	blocked(t, r.clk)
	r.clk.Step(time.Second)
	blocked(t, r.clk)
	if r.api.createCount() != 0 {
		t.Fatal("requested without an address")
	}
	setAddrs("10.0.0.1")
	r.clk.Step(time.Second)
	r.creates(1)
	waitFor(t, "the serving certificate", func() bool { return r.m.Current() != nil })
	if ips := r.current().IPAddresses; len(ips) != 1 || !ips[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Fatalf("SANs %v", ips)
	}
	setAddrs("10.0.0.1", "10.0.0.2")
	blocked(t, r.clk)
	r.clk.Step(time.Second)
	r.creates(2)
	waitFor(t, "the certificate with the new address", func() bool { return len(r.current().IPAddresses) == 2 })
}
