package localapi

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
)

// Lifetimes of the local API's certificates: a long-lived CA, and leaves
// renewed (at start-up) once less than renewBefore is left.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// CredentialsConfig says where the local API's credentials live and what
// its serving certificate is for.
type CredentialsConfig struct {
	// Dir holds ca.crt, ca.key, server.crt, server.key, admin.crt,
	// admin.key and the kubeconfig; it is made root-only (0700).
	Dir string
	// Address is the listen address (host:port).
	Address string
	// Hosts are more names and IPs the serving certificate is for (the
	// node name and addresses).
	Hosts []string
	Now   time.Time
}

// Credentials are the local API's TLS material.
type Credentials struct {
	// TLS serves the API: its certificate, and client certificates
	// required and checked against the local CA.
	TLS *tls.Config
	// Kubeconfig is the path of a kubeconfig for kubectl (root-only:
	// 0600), holding the CA and the admin client pair.
	Kubeconfig string
}

// EnsureCredentials makes (or reuses) a CA for the local API, issues its
// serving certificate and an admin client certificate from it, and writes
// a kubeconfig that reaches Address with them. Everything lives in Dir,
// readable by root only: whoever can read the kubeconfig is the node's
// administrator, as whoever can write staticPodPath already is.
func EnsureCredentials(cfg CredentialsConfig) (*Credentials, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("local API address %q: %w", cfg.Address, err)
	}
	ca, caKey, caPEM, err := loadOrMakeCA(cfg.Dir, cfg.Now)
	if err != nil {
		return nil, err
	}
	dns, ips := []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	for _, h := range append([]string{host}, cfg.Hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				ips = append(ips, ip)
			}
		} else if h != "" {
			dns = append(dns, h)
		}
	}
	serverCert, serverKey, err := issue(ca, caKey, cfg.Now, x509.Certificate{
		Subject: pkix.Name{CommonName: "kubelet-local-api"}, DNSNames: dns, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	if err := writePair(cfg.Dir, "server", serverCert, serverKey); err != nil {
		return nil, err
	}
	adminCert, adminKey, err := loadOrIssueClient(cfg.Dir, ca, caKey, cfg.Now)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	serverHost := host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		serverHost = "127.0.0.1"
	}
	kubeconfig := filepath.Join(cfg.Dir, "kubeconfig")
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"standalone": {Server: "https://" + net.JoinHostPort(serverHost, port), CertificateAuthorityData: caPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"local-admin": {ClientCertificateData: adminCert, ClientKeyData: adminKey}},
		Contexts:       map[string]*clientcmdapi.Context{"standalone": {Cluster: "standalone", AuthInfo: "local-admin", Namespace: "default"}},
		CurrentContext: "standalone",
	}
	data, err := clientcmd.Write(kc)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(kubeconfig, data, 0o600); err != nil {
		return nil, err
	}
	return &Credentials{
		TLS: &tls.Config{
			Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
			MinVersion: tls.VersionTLS12,
		},
		Kubeconfig: kubeconfig,
	}, nil
}

// loadOrMakeCA reads ca.crt and ca.key, or makes a new CA when they are
// missing, unusable or expire within renewBefore.
func loadOrMakeCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, keyPEM, err := readPair(dir, "ca")
	if err == nil {
		if cert, key, err := parsePair(certPEM, keyPEM); err == nil && cert.IsCA && now.Add(renewBefore).Before(cert.NotAfter) {
			return cert, key, certPEM, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "kubelet-local-api-ca"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(caLifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = encodePair(der, key)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := writePair(dir, "ca", certPEM, keyPEM); err != nil {
		return nil, nil, nil, err
	}
	klog.InfoS("Created the local API's certificate authority", "dir", dir)
	return cert, key, certPEM, nil
}

// loadOrIssueClient reuses admin.crt while it is the CA's and valid for
// renewBefore more, else issues a new one (CN local-admin, system:masters).
func loadOrIssueClient(dir string, ca *x509.Certificate, caKey crypto.Signer, now time.Time) ([]byte, []byte, error) {
	certPEM, keyPEM, err := readPair(dir, "admin")
	if err == nil {
		if cert, _, err := parsePair(certPEM, keyPEM); err == nil && now.Add(renewBefore).Before(cert.NotAfter) && cert.CheckSignatureFrom(ca) == nil {
			return certPEM, keyPEM, nil
		}
	}
	certPEM, keyPEM, err = issue(ca, caKey, now, x509.Certificate{
		Subject:     pkix.Name{CommonName: "local-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, writePair(dir, "admin", certPEM, keyPEM)
}

// issue signs a leaf of tmpl's subject, names and usages with a new key.
func issue(ca *x509.Certificate, caKey crypto.Signer, now time.Time, tmpl x509.Certificate) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(leafLifetime)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	return encodePair(der, key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func encodePair(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the key cannot sign")
	}
	return cert, signer, nil
}

func readPair(dir, name string) ([]byte, []byte, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	return certPEM, keyPEM, err
}

// writePair writes the key first: a crash in between leaves no
// certificate without its key.
func writePair(dir, name string, certPEM, keyPEM []byte) error {
	if old, err := os.ReadFile(filepath.Join(dir, name+".crt")); err == nil && bytes.Equal(old, certPEM) {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, name+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, name+".crt"), certPEM, 0o600)
}
