package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
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

var tlsVersions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10, "VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12, "VersionTLS13": tls.VersionTLS13,
}

// TLSConfig builds the server's TLS configuration.
func TLSConfig(o TLSOptions) (*tls.Config, error) {
	if o.GetCertificate == nil {
		return nil, errors.New("no serving certificate source")
	}
	cfg := &tls.Config{GetCertificate: o.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if o.MinVersion != "" {
		v, ok := tlsVersions[o.MinVersion]
		if !ok {
			return nil, fmt.Errorf("tlsMinVersion %q: unknown, want one of VersionTLS10..VersionTLS13", o.MinVersion)
		}
		cfg.MinVersion = v
	}
	if len(o.CipherSuites) > 0 {
		ids := map[string]uint16{}
		for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
			ids[s.Name] = s.ID
		}
		for _, name := range o.CipherSuites {
			id, ok := ids[name]
			if !ok {
				return nil, fmt.Errorf("tlsCipherSuites: unknown cipher suite %q", name)
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	if o.ClientCAs != nil {
		cfg.ClientCAs = o.ClientCAs
		// The auth filter verifies the chain, so a bad certificate is a 401
		// (and a token can still succeed), as upstream.
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg, nil
}
