package server

import (
	"crypto/tls"
	"testing"
)

func TestTLSConfig(t *testing.T) {
	served := &tls.Certificate{}
	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return served, nil }
	cfg, err := TLSConfig(TLSOptions{GetCertificate: get, MinVersion: "VersionTLS13"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS13 {
		t.Fatalf("min version %x", cfg.MinVersion)
	}
	if c, _ := cfg.GetCertificate(nil); c != served {
		t.Fatal("the certificate source is not used")
	}
	if cfg.ClientAuth != tls.NoClientCert {
		t.Fatal("client certificates requested without client CAs")
	}
}

func TestTLSConfigRejectsUnknownSettings(t *testing.T) {
	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	if _, err := TLSConfig(TLSOptions{}); err == nil {
		t.Fatal("no certificate source accepted")
	}
	if _, err := TLSConfig(TLSOptions{GetCertificate: get, MinVersion: "VersionTLS99"}); err == nil {
		t.Fatal("unknown TLS version accepted")
	}
	if _, err := TLSConfig(TLSOptions{GetCertificate: get, CipherSuites: []string{"TLS_NOPE"}}); err == nil {
		t.Fatal("unknown cipher suite accepted")
	}
	if _, err := TLSConfig(TLSOptions{GetCertificate: get, CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}); err != nil {
		t.Fatalf("known cipher suite refused: %v", err)
	}
}
