package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// tlsServer requires a client certificate from ca and answers with the
// certificate's common name; it counts the connections it accepted.
type tlsServer struct {
	*httptest.Server
	mu    sync.Mutex
	conns int
}

func newTLSServer(t *testing.T, ca *testCA) *tlsServer {
	t.Helper()
	s := &tlsServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	certPEM, keyPEM := ca.pair(t, "apiserver", time.Now().Add(-time.Hour), 24*time.Hour)
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *tlsServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestRotatingConfigSwitchesCertificatesWithoutARestart: every request
// presents the manager's current certificate; a new one closes the open
// connections so the very next request handshakes with it.
func TestRotatingConfigSwitchesCertificatesWithoutARestart(t *testing.T) {
	ca := newTestCA(t)
	srv := newTLSServer(t, ca)
	certA, keyA := ca.pair(t, "system:node:a", time.Now().Add(-time.Minute), time.Hour)
	r := newRig(t, func(c *Config) {
		c.BootstrapCertPEM, c.BootstrapKeyPEM = certA, keyA
		c.Clock = nil // real time: the TLS handshake checks validity
	})
	cfg, err := rotatingConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}, r.m)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, client, srv.URL); got != "system:node:a" {
		t.Fatalf("first request as %q", got)
	}
	get(t, client, srv.URL)
	if srv.connections() != 1 {
		t.Fatalf("%d connections, want one kept alive", srv.connections())
	}
	certB, keyB := ca.pair(t, "system:node:b", time.Now().Add(-time.Minute), time.Hour)
	pairB, err := parsePair(certB, keyB)
	if err != nil {
		t.Fatal(err)
	}
	r.m.setCurrent(pairB)
	waitFor(t, "the request to present the new certificate", func() bool {
		return get(t, client, srv.URL) == "system:node:b"
	})
	if srv.connections() != 2 {
		t.Fatalf("%d connections, want the old one closed and one new", srv.connections())
	}
}

// TestRotatingConfigHoldsRequestsUntilTheFirstCertificate: during TLS
// bootstrap requests wait instead of going out anonymously, and go out as
// soon as the certificate is there.
func TestRotatingConfigHoldsRequestsUntilTheFirstCertificate(t *testing.T) {
	ca := newTestCA(t)
	srv := newTLSServer(t, ca)
	r := newRig(t, func(c *Config) { c.Clock = nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := rotatingConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}, r.m)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := rest.HTTPClientFor(cfg)
	got := make(chan string, 1)
	go func() { got <- get(t, client, srv.URL) }()
	select {
	case g := <-got:
		t.Fatalf("a request went out without a certificate: %q", g)
	case <-time.After(100 * time.Millisecond):
	}
	if srv.connections() != 0 {
		t.Fatal("connected without a certificate")
	}
	certA, keyA := ca.pair(t, "system:node:a", time.Now().Add(-time.Minute), time.Hour)
	pair, _ := parsePair(certA, keyA)
	r.m.setCurrent(pair)
	select {
	case g := <-got:
		if g != "system:node:a" {
			t.Fatalf("request as %q", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held request did not go out")
	}
	// A held request ends with its context.
	r2 := newRig(t, func(c *Config) { c.Clock = nil })
	cfg2, _ := rotatingConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}, r2.m)
	client2, _ := rest.HTTPClientFor(cfg2)
	rctx, rcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer rcancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, srv.URL, nil)
	if _, err := client2.Do(req); err == nil {
		t.Fatal("request without a certificate succeeded")
	}
}
