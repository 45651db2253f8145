package server

import (
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
	"os"
	"path/filepath"
	"time"

	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
)

// TLSOptions configures the kubelet API's TLS.
type TLSOptions struct {
	// CertFile and KeyFile are tlsCertFile/tlsPrivateKeyFile; when empty a
	// self-signed pair is generated into CertDir (kubelet.crt/kubelet.key),
	// or reused from there, as upstream.
	CertFile, KeyFile, CertDir string
	// Hostname and IPs go into a generated certificate.
	Hostname string
	IPs      []string
	// MinVersion (VersionTLS12, ...) and CipherSuites (Go/IANA names).
	MinVersion   string
	CipherSuites []string
	// ClientCAs verify client certificates when given.
	ClientCAs *x509.CertPool
	// Now is the clock for generated certificates.
	Now func() time.Time
}

// TLSConfig builds the server's TLS configuration.
func TLSConfig(o TLSOptions) (*tls.Config, error) {
	certFile, keyFile := o.CertFile, o.KeyFile
	if certFile == "" || keyFile == "" {
		var err error
		if certFile, keyFile, err = selfSigned(o); err != nil {
			return nil, err
		}
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load kubelet serving certificate %s / %s: %w", certFile, keyFile, err)
	}
	// The names are component-base's (cliflag), as upstream's kubelet reads
	// tlsMinVersion and tlsCipherSuites; an empty version is TLS 1.2.
	minVersion, err := cliflag.TLSVersion(o.MinVersion)
	if err != nil {
		return nil, fmt.Errorf("tlsMinVersion: %w", err)
	}
	suites, err := cliflag.TLSCipherSuites(o.CipherSuites)
	if err != nil {
		return nil, fmt.Errorf("tlsCipherSuites: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: minVersion, CipherSuites: suites, NextProtos: []string{"http/1.1"}}
	if o.ClientCAs != nil {
		cfg.ClientCAs = o.ClientCAs
		// The auth filter verifies the chain, so a bad certificate is a 401
		// (and a token can still succeed), as upstream.
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg, nil
}

// selfSigned returns CertDir's kubelet.crt/kubelet.key, generating them
// when missing.
func selfSigned(o TLSOptions) (string, string, error) {
	certFile, keyFile := filepath.Join(o.CertDir, "kubelet.crt"), filepath.Join(o.CertDir, "kubelet.key")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		return certFile, keyFile, nil
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", o.Hostname, t.Unix())},
		NotBefore:             t.Add(-time.Hour),
		NotAfter:              t.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{o.Hostname},
	}
	for _, ip := range o.IPs {
		if parsed := net.ParseIP(ip); parsed != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, parsed)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", fmt.Errorf("generate self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return "", "", fmt.Errorf("create cert dir: %w", err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	klog.InfoS("Generated a self-signed serving certificate", "cert", certFile, "key", keyFile)
	return certFile, keyFile, nil
}
