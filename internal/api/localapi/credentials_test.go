package localapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestCredentialsServeOnlyTheirClient(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "local-api")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	creds, err := EnsureCredentials(CredentialsConfig{Dir: dir, Address: ln.Addr().String(), Hosts: []string{"node1", "192.0.2.2"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"": 0o700, "kubeconfig": 0o600, "ca.key": 0o600, "server.key": 0o600, "admin.key": 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", name, st.Mode().Perm(), err, mode)
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), TLSConfig: creds.TLS}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })

	// kubectl's view: the kubeconfig alone reaches the server.
	cfg, err := clientcmd.BuildConfigFromFlags("", creds.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://"+ln.Addr().String() {
		t.Errorf("kubeconfig server = %q", cfg.Host)
	}
	tlsCfg, err := clientTLS(cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := client.Get(cfg.Host + "/")
	if err != nil {
		t.Fatalf("with the kubeconfig's certificate: %v", err)
	}
	resp.Body.Close()

	// Without a client certificate the handshake fails.
	anon, _ := clientTLS(cfg.TLSClientConfig.CAData, nil, nil)
	if resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: anon}}).Get(cfg.Host + "/"); err == nil {
		resp.Body.Close()
		t.Fatal("a client without a certificate was served")
	}

	// The admin certificate of another node's local API (another CA) is
	// refused, and so is this server's own serving pair used as a client.
	other, err := EnsureCredentials(CredentialsConfig{Dir: filepath.Join(t.TempDir(), "other"), Address: ln.Addr().String(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	otherCfg, err := clientcmd.BuildConfigFromFlags("", other.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	serverCert, _ := os.ReadFile(filepath.Join(dir, "server.crt"))
	serverKey, _ := os.ReadFile(filepath.Join(dir, "server.key"))
	for name, pair := range map[string][2][]byte{
		"another node's admin": {otherCfg.TLSClientConfig.CertData, otherCfg.TLSClientConfig.KeyData},
		"the serving pair":     {serverCert, serverKey},
	} {
		tc, err := clientTLS(cfg.TLSClientConfig.CAData, pair[0], pair[1])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tc}}).Get(cfg.Host + "/"); err == nil {
			resp.Body.Close()
			t.Errorf("a client with %s certificate was served", name)
		}
	}

	// A restart keeps the CA and the admin pair (kubeconfigs handed out
	// stay valid).
	ca1, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	admin1, _ := os.ReadFile(filepath.Join(dir, "admin.crt"))
	if _, err := EnsureCredentials(CredentialsConfig{Dir: dir, Address: ln.Addr().String(), Now: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ca2, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	admin2, _ := os.ReadFile(filepath.Join(dir, "admin.crt"))
	if string(ca1) != string(ca2) || string(admin1) != string(admin2) {
		t.Error("a restart replaced the CA or the admin certificate")
	}
}

func clientTLS(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	cfg := &tls.Config{}
	pool, err := certPool(caPEM)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func certPool(caPEM []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA in the kubeconfig")
	}
	return pool, nil
}
