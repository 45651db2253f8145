package app

import (
	"context"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/certificate"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/runtime/cri"
)

// containerLogsDir holds the legacy /var/log/containers links log shippers read.
const containerLogsDir = "/var/log/containers"

// base is what every later stage is built with: the configuration, the
// clock, the metrics, and the connections to the runtime and (in cluster
// mode) the API server.
type base struct {
	cfg     *kubeletconfig.KubeletConfiguration
	flags   options.KubeletFlags
	host    hostInfo
	clock   clock.WithTicker
	metrics *metrics.Metrics
	cri     *cri.Client
	version *runtimeapi.VersionResponse
	// api is nil in standalone mode.
	api *clients
	// identity is the kubelet's client certificate (TLS bootstrap and
	// rotation); nil in standalone mode.
	identity *certificate.Client
	recorder *events.Broadcaster
	// events keeps the recent events in standalone mode (the recorder);
	// nil in cluster mode, where they go to the API server.
	events *events.Ring
}

// connect dials the runtime and waits until it answers, and connects to
// the API server when --kubeconfig is given.
func connect(ctx context.Context, o *options.Options, host hostInfo) (*base, error) {
	cfg := o.Config
	clk := clock.RealClock{}
	m := metrics.New()
	client, err := cri.Dial(cri.Config{
		RuntimeEndpoint: cfg.ContainerRuntimeEndpoint, ImageEndpoint: cfg.ImageServiceEndpoint,
		Timeout: cfg.RuntimeRequestTimeout.Duration, Interceptors: []grpc.UnaryClientInterceptor{m.UnaryInterceptor},
	})
	if err != nil {
		return nil, err
	}
	version, err := cri.WaitForRuntime(ctx, client.Runtime, clk)
	if err != nil {
		client.Close()
		return nil, err
	}
	klog.InfoS("Container runtime initialized", "containerRuntime", version.RuntimeName, "version", version.RuntimeVersion, "apiVersion", version.RuntimeApiVersion)
	var api *clients
	var identity *certificate.Client
	var ring *events.Ring
	var recorder *events.Broadcaster
	if o.Flags.KubeConfig == "" {
		// Standalone: the events go where the API server would keep them,
		// for the local API.
		ring = events.NewRing(events.RingConfig{Clock: clk})
		recorder = eventRecorder(ctx, ring, host.nodeName, clk)
	} else {
		if identity, err = startClientCertificate(ctx, o.Flags, cfg, host.nodeName, clk); err != nil {
			client.Close()
			return nil, err
		}
		if api, err = newClients(identity.Config, cfg); err != nil {
			client.Close()
			return nil, err
		}
		recorder = eventRecorder(ctx, kubeclient.EventSink{Core: api.events.CoreV1()}, host.nodeName, clk)
	}
	return &base{cfg: cfg, flags: o.Flags, host: host, clock: clk, metrics: m, cri: client, version: version,
		api: api, identity: identity, recorder: recorder, events: ring}, nil
}

// apiClient is the main API client, nil in standalone mode.
func (b *base) apiClient() kubeclient.Interface {
	if b.api == nil {
		return nil
	}
	return b.api.main
}
