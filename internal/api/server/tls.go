package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	cliflag "k8s.io/component-base/cli/flag"
)

// TLSOptions configures the kubelet API's TLS.
type TLSOptions struct {
	// GetCertificate returns the serving certificate for each handshake
	// (internal/certificate: requested, read from files and reloaded, or
	// self-signed). Required.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// MinVersion (VersionTLS12, ...) and CipherSuites (Go/IANA names).
	MinVersion   string
	CipherSuites []string
	// ClientCAs verify client certificates when given.
	ClientCAs *x509.CertPool
}

// TLSConfig builds the server's TLS configuration.
func TLSConfig(o TLSOptions) (*tls.Config, error) {
	if o.GetCertificate == nil {
		return nil, errors.New("no serving certificate source")
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
	cfg := &tls.Config{GetCertificate: o.GetCertificate, MinVersion: minVersion, CipherSuites: suites, NextProtos: []string{"http/1.1"}}
	if o.ClientCAs != nil {
		cfg.ClientCAs = o.ClientCAs
		// The auth filter verifies the chain, so a bad certificate is a 401
		// (and a token can still succeed), as upstream.
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg, nil
}
