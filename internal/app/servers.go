package app

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seed-kubelet/kubelet/internal/api/auth"
	"github.com/seed-kubelet/kubelet/internal/api/logs"
	"github.com/seed-kubelet/kubelet/internal/api/server"
	"github.com/seed-kubelet/kubelet/internal/api/streaming"
	"github.com/seed-kubelet/kubelet/internal/certificate"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// serverConfig is what the HTTP endpoints read.
type serverConfig struct {
	checks   []server.HealthCheck
	pods     *podmanager.Manager
	statuses *statusmanager.Manager
	runtime  *kuberuntime.Manager
	stats    *stats.Provider
	// node holds the addresses a requested serving certificate is for.
	node *nodestatus.Latest
	// collectors are extra /metrics families (credential provider plugins).
	collectors []prometheus.Collector
	// local is what the local API reads; nil in cluster mode.
	local *localAPIConfig
}

// startServers starts the healthz port, the read-only port and the
// authenticated kubelet API, as configured.
func startServers(ctx context.Context, b *base, s serverConfig) error {
	cfg := b.cfg
	if cfg.HealthzPort != nil && *cfg.HealthzPort > 0 {
		addr := net.JoinHostPort(cfg.HealthzBindAddress, strconv.Itoa(int(*cfg.HealthzPort)))
		if err := server.Serve(ctx, "healthz", addr, server.HealthzMux(s.checks)); err != nil {
			return err
		}
	}
	// The kubelet API's certificate (requested, from files or
	// self-signed), set up first for its metrics.
	serveAPI := derefBool(cfg.EnableServer, true) && cfg.Port > 0
	collectors := append(append(clientCertificateCollectors(b.identity), s.stats.VolumeStatsCollector()), s.collectors...)
	collectors = append(collectors, metrics.ManagedEphemeralContainers(func() int {
		n := 0
		for _, p := range s.pods.List() {
			n += len(p.Spec.EphemeralContainers)
		}
		return n
	}))
	var serving *certificate.Serving
	if serveAPI {
		var err error
		if serving, err = startServingCertificate(ctx, b, s.node); err != nil {
			return err
		}
		collectors = append(collectors, serving.Collectors()...)
	}
	logsCfg := logs.Config{Pods: s.pods, Runtime: b.cri.Runtime, Statuses: s.statuses, Clock: b.clock}
	resourceRegistry := prometheus.NewRegistry()
	resourceRegistry.MustRegister(s.stats.ResourceMetricsCollector())
	apiCfg := server.APIConfig{
		Pods: s.pods, Statuses: s.statuses, Checks: s.checks, Config: cfg,
		RunningPods:     s.runtime.RunningAPIPods,
		Metrics:         promhttp.HandlerFor(b.metrics.Registry(collectors...), promhttp.HandlerOpts{}),
		Summary:         s.stats.SummaryHandler(),
		CadvisorMetrics: s.stats.CadvisorHandler(),
		ContainerLogs:   logs.ContainerLogsHandler(logsCfg),
		NodeLogs:        logs.NodeLogsHandler(logsCfg),
		Streaming: streaming.Handler(streaming.Config{
			Pods: s.pods, Runtime: b.cri.Runtime, StreamIdleTimeout: cfg.StreamingConnectionIdleTimeout.Duration,
		}),
		ResourceMetrics: promhttp.HandlerFor(resourceRegistry, promhttp.HandlerOpts{}),
		ProbeMetrics:    promhttp.HandlerFor(b.metrics.ProbeRegistry(), promhttp.HandlerOpts{}),
		Debug: server.DebugHandlers{
			Enabled:             derefBool(cfg.EnableDebuggingHandlers, true),
			SystemLogs:          derefBool(cfg.EnableSystemLogHandler, true),
			Profiling:           derefBool(cfg.EnableProfilingHandler, true),
			ContentionProfiling: cfg.EnableContentionProfiling,
			Flags:               derefBool(cfg.EnableDebugFlagsHandler, true),
		},
	}
	if err := startLocalAPI(ctx, b, s, logsCfg, apiCfg); err != nil {
		return err
	}
	if cfg.ReadOnlyPort > 0 {
		addr := net.JoinHostPort(cfg.Address, strconv.Itoa(int(cfg.ReadOnlyPort)))
		if err := server.Serve(ctx, "read-only", addr, server.ReadOnlyMux(apiCfg)); err != nil {
			return err
		}
	}
	if !serveAPI {
		return nil
	}
	filter, err := auth.New(auth.Config{Authentication: cfg.Authentication, Authorization: cfg.Authorization, Client: b.apiClient(), NodeName: b.host.nodeName, Clock: b.clock})
	if err != nil {
		return fmt.Errorf("kubelet API on port %d: %w (in standalone mode set authentication.webhook.enabled=false and authorization.mode=AlwaysAllow, or enableServer=false)", cfg.Port, err)
	}
	tlsCfg, err := server.TLSConfig(server.TLSOptions{
		GetCertificate: serving.GetCertificate, MinVersion: cfg.TLSMinVersion, CipherSuites: cfg.TLSCipherSuites,
		ClientCAs: filter.ClientCAs(),
	})
	if err != nil {
		return err
	}
	if apiCfg.Debug.BlockProfiling() {
		// enableContentionProfiling, as upstream's InstallProfilingHandler.
		runtime.SetBlockProfileRate(1)
	}
	addr := net.JoinHostPort(cfg.Address, strconv.Itoa(int(cfg.Port)))
	return server.ServeTLS(ctx, "kubelet API", addr, filter.Wrap(server.APIMux(apiCfg)), tlsCfg)
}
