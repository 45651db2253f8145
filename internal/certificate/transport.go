package certificate

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
)

// rotatingConfig returns a copy of base that authenticates with m's
// current certificate (upstream's UpdateTransport): every client built
// from it shares one transport that presents m.Current() in each TLS
// handshake, and when the certificate changes every open connection is
// closed so the next request handshakes with the new one. Requests made
// while there is no valid certificate (during TLS bootstrap) wait for one
// instead of failing as anonymous: they go out the moment it is issued.
func rotatingConfig(base *rest.Config, m *Manager) (*rest.Config, error) {
	cfg := rest.AnonymousClientConfig(base)
	if cfg.Transport != nil || cfg.Dial != nil {
		return nil, fmt.Errorf("there is already a transport or dialer configured")
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("unable to configure TLS for the rest client: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := m.Current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         dialer.DialContext,
	})
	// The transport carries the TLS settings now.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &awaitCertificate{m: m, next: rt} }

	m.OnChange(func() {
		klog.InfoS("Certificate rotation detected, shutting down client connections to start using new credentials")
		dialer.CloseAll()
	})
	return cfg, nil
}

// awaitCertificate holds a request until the manager has a valid
// certificate (or the request's context ends).
type awaitCertificate struct {
	m    *Manager
	next http.RoundTripper
}

func (a *awaitCertificate) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.m.Current() == nil {
		if err := a.m.WaitForCurrent(req.Context()); err != nil {
			return nil, fmt.Errorf("no valid client certificate yet (TLS bootstrap in progress): %w", err)
		}
	}
	return a.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go's utilities (CloseIdleConnectionsFor)
// reach the transport.
func (a *awaitCertificate) WrappedRoundTripper() http.RoundTripper { return a.next }
