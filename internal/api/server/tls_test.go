package server

import (
	"crypto/tls"
	"testing"
)

func TestTLSConfigSelfSignedAndReused(t *testing.T) {
	dir := t.TempDir()
	o := TLSOptions{CertDir: dir, Hostname: "node1", IPs: []string{"127.0.0.1"}, MinVersion: "VersionTLS13"}
	cfg, err := TLSConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS13 {
		t.Fatalf("min version %x", cfg.MinVersion)
	}
	cert := cfg.Certificates[0].Certificate[0]
	again, err := TLSConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Certificates[0].Certificate[0]) != string(cert) {
		t.Fatal("the generated certificate was not reused")
	}
}

func TestTLSConfigRejectsUnknownSettings(t *testing.T) {
	dir := t.TempDir()
	if _, err := TLSConfig(TLSOptions{CertDir: dir, Hostname: "n", MinVersion: "VersionTLS99"}); err == nil {
		t.Fatal("unknown TLS version accepted")
	}
	if _, err := TLSConfig(TLSOptions{CertDir: dir, Hostname: "n", CipherSuites: []string{"TLS_NOPE"}}); err == nil {
		t.Fatal("unknown cipher suite accepted")
	}
	if _, err := TLSConfig(TLSOptions{CertDir: dir, Hostname: "n", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}); err != nil {
		t.Fatalf("known cipher suite refused: %v", err)
	}
}
