package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	testingclock "k8s.io/utils/clock/testing"
)

func TestCSROutcome(t *testing.T) {
	cond := func(ty certificatesv1.RequestConditionType, reason, msg string) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: ty, Status: "True", Reason: reason, Message: msg}
	}
	csr := func(uid string, cert string, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "csr-x", UID: types.UID(uid)},
			Status:     certificatesv1.CertificateSigningRequestStatus{Conditions: conds, Certificate: []byte(cert)},
		}
	}
	cases := []struct {
		name     string
		csr      *certificatesv1.CertificateSigningRequest
		wantCert string
		wantErr  error
		errParts []string
	}{
		{name: "pending", csr: csr("u", "")},
		{name: "approved, not issued yet", csr: csr("u", "", cond(certificatesv1.CertificateApproved, "AutoApproved", ""))},
		{name: "issued", csr: csr("u", "PEM", cond(certificatesv1.CertificateApproved, "AutoApproved", "")), wantCert: "PEM"},
		{name: "certificate without approval is not taken", csr: csr("u", "PEM")},
		{name: "denied", csr: csr("u", "", cond(certificatesv1.CertificateDenied, "NotMyNode", "wrong node")),
			wantErr: ErrDenied, errParts: []string{"csr-x", "NotMyNode", "wrong node"}},
		{name: "denied after approval", csr: csr("u", "", cond(certificatesv1.CertificateApproved, "A", ""), cond(certificatesv1.CertificateDenied, "Later", "")),
			wantErr: ErrDenied},
		{name: "failed", csr: csr("u", "", cond(certificatesv1.CertificateApproved, "A", ""), cond(certificatesv1.CertificateFailed, "SignerError", "no CA")),
			wantErr: ErrFailed, errParts: []string{"csr-x", "SignerError", "no CA"}},
		{name: "replaced by another CSR of the same name", csr: csr("other", "PEM", cond(certificatesv1.CertificateApproved, "A", "")),
			wantErr: ErrDeleted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := csrOutcome(tc.csr, "u")
			if string(cert) != tc.wantCert {
				t.Errorf("cert = %q, want %q", cert, tc.wantCert)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !containsAll(err.Error(), tc.errParts...) {
				t.Errorf("error %q does not name %v", err, tc.errParts)
			}
		})
	}
}

func newCSRFor(t *testing.T, cn string) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csrPEM, err := certutil.MakeCSR(key, &pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return csrPEM, key
}

func TestWaitForCertificate(t *testing.T) {
	ca := newTestCA(t)
	ctx := context.Background()
	type step func(t *testing.T, f *fakeCSRs, name string, clk *testingclock.FakeClock)
	issue := func(t *testing.T, f *fakeCSRs, name string, _ *testingclock.FakeClock) {
		f.update(t, name, approve)
		f.update(t, name, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = ca.sign(t, c.Spec.Request, time.Now(), time.Hour, nil)
		})
	}
	cases := []struct {
		name    string
		act     step
		wantErr error
	}{
		{name: "approved then issued through the watch", act: issue},
		{name: "denied", act: func(t *testing.T, f *fakeCSRs, name string, _ *testingclock.FakeClock) {
			f.update(t, name, func(c *certificatesv1.CertificateSigningRequest) {
				c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateDenied, Status: "True", Reason: "Nope", Message: "not you"})
			})
		}, wantErr: ErrDenied},
		{name: "deleted", act: func(t *testing.T, f *fakeCSRs, name string, _ *testingclock.FakeClock) { f.delete(name) }, wantErr: ErrDeleted},
		{name: "nobody approves", act: func(t *testing.T, f *fakeCSRs, name string, clk *testingclock.FakeClock) {
			blocked(t, clk)
			clk.Step(DefaultWaitTimeout)
		}, wantErr: ErrNotIssued},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCSRs()
			clk := testingclock.NewFakeClock(time.Now())
			csrPEM, key := newCSRFor(t, "system:node:n1")
			name, uid, err := requestCertificate(ctx, f, clk.Now(), csrPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, ClientUsages(key), key)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				cert []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				cert, err := waitForCertificate(ctx, f, clk, name, uid, DefaultWaitTimeout)
				done <- result{cert, err}
			}()
			tc.act(t, f, name, clk)
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("waitForCertificate did not return")
			}
			if tc.wantErr == nil {
				if r.err != nil || len(r.cert) == 0 {
					t.Fatalf("got %d bytes, %v; want the certificate", len(r.cert), r.err)
				}
				return
			}
			if !errors.Is(r.err, tc.wantErr) || !strings.Contains(r.err.Error(), name) {
				t.Fatalf("err = %v, want %v naming %s", r.err, tc.wantErr, name)
			}
		})
	}
}

func TestRequestCertificateReusesACompatibleCSR(t *testing.T) {
	ctx := context.Background()
	f := newFakeCSRs()
	csrPEM, key := newCSRFor(t, "system:node:n1")
	usages := ClientUsages(key)
	name, err := digestedName(key.Public(), &pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, usages)
	if err != nil {
		t.Fatal(err)
	}
	first, uid, err := requestCertificate(ctx, f, time.Now(), csrPEM, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil || first != name {
		t.Fatalf("first request: %s %v", first, err)
	}
	// The kubelet restarted: a fresh CSR (new random signature) with the
	// same key finds the first one.
	again, _ := newCSRWithKey(t, key, "system:node:n1")
	second, uid2, err := requestCertificate(ctx, f, time.Now(), again, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil || second != name || uid2 != uid {
		t.Fatalf("second request: %s %s %v, want the first CSR", second, uid2, err)
	}
	if f.createCount() != 2 {
		t.Fatalf("%d creates", f.createCount())
	}
	// Another key cannot take it over.
	otherPEM, other := newCSRFor(t, "system:node:n1")
	if _, _, err := requestCertificate(ctx, f, time.Now(), otherPEM, name, certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, other); err == nil {
		t.Fatal("a CSR signed by another key was reused")
	}
}

func newCSRWithKey(t *testing.T, key *ecdsa.PrivateKey, cn string) ([]byte, error) {
	t.Helper()
	return certutil.MakeCSR(key, &pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}, nil, nil)
}

func TestDigestedName(t *testing.T) {
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	subj := &pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}}
	usages := ClientUsages(k1)
	a, _ := digestedName(k1.Public(), subj, usages)
	b, _ := digestedName(k1.Public(), subj, usages)
	c, _ := digestedName(k2.Public(), subj, usages)
	d, _ := digestedName(k1.Public(), &pkix.Name{CommonName: "system:node:b", Organization: []string{"system:nodes"}}, usages)
	if a != b || a == c || a == d || !strings.HasPrefix(a, "node-csr-") || len(a) != len("node-csr-")+43 {
		t.Fatalf("names %q %q %q %q", a, b, c, d)
	}
	// Delimited fields: CN "ab" + O "c" differs from CN "a" + O "bc".
	x, _ := digestedName(k1.Public(), &pkix.Name{CommonName: "ab", Organization: []string{"c"}}, usages)
	y, _ := digestedName(k1.Public(), &pkix.Name{CommonName: "a", Organization: []string{"bc"}}, usages)
	if x == y {
		t.Fatal("field boundaries are not part of the digest")
	}
}

func TestEnsureCompatibleRefusesExpiredCertificate(t *testing.T) {
	ca := newTestCA(t)
	csrPEM, key := newCSRFor(t, "system:node:n1")
	existing := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM}}
	existing.Status.Certificate = ca.sign(t, csrPEM, time.Now().Add(-2*time.Hour), time.Hour, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	want := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM}}
	if err := ensureCompatible(existing, want, key, time.Now()); err == nil {
		t.Fatal("an expired issued certificate was accepted")
	}
	if err := ensureCompatible(existing, want, key, time.Now().Add(-90*time.Minute)); err != nil {
		t.Fatalf("valid then: %v", err)
	}
}
