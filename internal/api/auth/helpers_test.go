package auth

import (
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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// testNow is the fake clock's start; test certificates are valid around it.
var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const testNode = "node-a"

// noBackoff retries webhook calls three times without sleeping.
var noBackoff = wait.Backoff{Steps: 3}

type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

var serial int64

func newKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newTestCA makes a root CA, or an intermediate signed by parent.
func newTestCA(t *testing.T, cn string, parent *testCA) *testCA {
	t.Helper()
	serial++
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             testNow.Add(-24 * time.Hour),
		NotAfter:              testNow.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: c, key: key}
}

type leafOpts struct {
	cn        string
	orgs      []string
	uids      []string
	notBefore time.Time
	notAfter  time.Time
	usages    []x509.ExtKeyUsage
}

// issue signs a leaf; unset fields default to a client cert valid at testNow.
func (ca *testCA) issue(t *testing.T, o leafOpts) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	serial++
	if o.notBefore.IsZero() {
		o.notBefore = testNow.Add(-time.Hour)
	}
	if o.notAfter.IsZero() {
		o.notAfter = testNow.Add(24 * time.Hour)
	}
	if o.usages == nil {
		o.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	subject := pkix.Name{CommonName: o.cn, Organization: o.orgs}
	for _, uid := range o.uids {
		subject.ExtraNames = append(subject.ExtraNames, pkix.AttributeTypeAndValue{Type: uidOID, Value: uid})
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      subject,
		NotBefore:    o.notBefore,
		NotAfter:     o.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  o.usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func pemOf(cs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range cs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeAPI is a fake clientset whose TokenReview and SubjectAccessReview
// answers come from the test, recording each review it gets.
type fakeAPI struct {
	*fake.Clientset
	mu      sync.Mutex
	tokens  []string
	reviews []authorizationv1.SubjectAccessReviewSpec
}

func newFakeAPI(token func(string) (authenticationv1.TokenReviewStatus, error), sar func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error)) *fakeAPI {
	f := &fakeAPI{Clientset: fake.NewClientset()}
	f.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		f.mu.Lock()
		f.tokens = append(f.tokens, tr.Spec.Token)
		f.mu.Unlock()
		if token == nil {
			return true, nil, fmt.Errorf("unexpected TokenReview")
		}
		st, err := token(tr.Spec.Token)
		if err != nil {
			return true, nil, err
		}
		return true, &authenticationv1.TokenReview{Spec: tr.Spec, Status: st}, nil
	})
	f.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		f.mu.Lock()
		f.reviews = append(f.reviews, r.Spec)
		f.mu.Unlock()
		if sar == nil {
			return true, nil, fmt.Errorf("unexpected SubjectAccessReview")
		}
		st, err := sar(r.Spec)
		if err != nil {
			return true, nil, err
		}
		return true, &authorizationv1.SubjectAccessReview{Spec: r.Spec, Status: st}, nil
	})
	return f
}

func (f *fakeAPI) tokenCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.tokens)
}

func (f *fakeAPI) subresourcesReviewed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.reviews {
		out = append(out, r.ResourceAttributes.Subresource)
	}
	return out
}

// seen records what the wrapped handler got.
type seen struct {
	user    *User
	headers http.Header
}

// serve runs req through f in front of a handler that records the user.
func serve(f *Filter, req *http.Request) (*httptest.ResponseRecorder, *seen) {
	s := &seen{}
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.user, _ = UserFrom(r.Context())
		s.headers = r.Header.Clone()
		_, _ = w.Write([]byte("ok"))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, s
}

func withPeerCerts(req *http.Request, certs ...*x509.Certificate) *http.Request {
	req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	return req
}

func newFakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(testNow) }
