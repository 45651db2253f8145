package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/certificate"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
)

// startClientCertificate sets up the kubelet's API identity from
// --kubeconfig, --bootstrap-kubeconfig and rotateCertificates (TLS
// bootstrap and client certificate rotation run in the background) and
// returns the credentials the API clients are built from.
func startClientCertificate(ctx context.Context, flags options.KubeletFlags, cfg *kubeletconfig.KubeletConfiguration, nodeName string, clk clock.WithTicker) (*certificate.Client, error) {
	creds, err := certificate.NewClient(ctx, certificate.ClientConfig{
		Kubeconfig: flags.KubeConfig, BootstrapKubeconfig: flags.BootstrapKubeconfig, CertDir: flags.CertDirectory,
		NodeName: nodeName, Rotate: cfg.RotateCertificates, Clock: clk,
	})
	if err != nil {
		return nil, err
	}
	go creds.Run(ctx)
	return creds, nil
}

// nodeStatusWake is what wakes the node status controller: the eviction
// manager's pressure changes, volumes that need attaching coming into use,
// the node starting or stopping to shut down, and every new client
// certificate (a node that waited for TLS bootstrap registers the moment it
// has credentials).
func nodeStatusWake(ctx context.Context, creds *certificate.Client, changes ...<-chan struct{}) <-chan struct{} {
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default: // a wake is already pending
		}
	}
	if creds != nil && creds.Manager != nil {
		creds.Manager.OnChange(poke)
	}
	for _, ch := range changes {
		if ch == nil {
			continue
		}
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-ch:
					poke()
				}
			}
		}()
	}
	return wake
}

// clientCertificateCollectors are the client certificate's metrics (with a
// certificate manager only, as upstream).
func clientCertificateCollectors(creds *certificate.Client) []prometheus.Collector {
	if creds == nil || !creds.Rotating() {
		return nil
	}
	return creds.Metrics.Collectors(creds.Manager)
}

// startServingCertificate sets up the kubelet API's certificate from
// serverTLSBootstrap, tlsCertFile/tlsPrivateKeyFile or the self-signed
// fallback in --cert-dir, and keeps it current in the background.
func startServingCertificate(ctx context.Context, b *base, node *nodestatus.Latest) (*certificate.Serving, error) {
	scfg := certificate.ServingConfig{
		CertFile: b.cfg.TLSCertFile, KeyFile: b.cfg.TLSPrivateKeyFile, CertDir: b.flags.CertDirectory,
		Bootstrap: b.cfg.ServerTLSBootstrap, NodeName: b.host.nodeName, Clock: b.clock,
		Addresses: func() []v1.NodeAddress {
			if n := node.Node(); n != nil {
				return n.Status.Addresses
			}
			return nil
		},
	}
	if api := b.apiClient(); api != nil {
		scfg.CSRs = api.CertificatesV1().CertificateSigningRequests()
	}
	serving, err := certificate.NewServing(scfg)
	if err != nil {
		return nil, err
	}
	go serving.Run(ctx)
	return serving, nil
}
