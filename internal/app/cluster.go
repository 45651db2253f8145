package app

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// clients are the kubelet's API connections, as upstream splits them: the
// main client, one for events (its own rate limit) and one for heartbeats
// (node status and lease: no rate limit, a short timeout).
type clients struct {
	main, events, heartbeat kubeclient.Interface
}

// newClients builds the three clients from the kubelet's credentials.
func newClients(creds *rest.Config, cfg *kubeletconfig.KubeletConfiguration) (*clients, error) {
	base := rest.CopyConfig(creds)
	base.UserAgent = "kubelet/" + options.Version + " (linux) seed-kubelet"
	if cfg.ContentType != "" {
		base.ContentType = cfg.ContentType
		base.AcceptContentTypes = cfg.ContentType + ",application/json"
	}
	mk := func(mutate func(c *rest.Config)) (kubeclient.Interface, error) {
		c := rest.CopyConfig(base)
		mutate(c)
		return kubeclient.NewForConfig(c)
	}
	var out clients
	var err error
	if out.main, err = mk(func(c *rest.Config) {
		c.QPS = float32(derefInt32(cfg.KubeAPIQPS))
		c.Burst = int(cfg.KubeAPIBurst)
	}); err != nil {
		return nil, err
	}
	if out.events, err = mk(func(c *rest.Config) {
		c.QPS = float32(derefInt32(cfg.EventRecordQPS))
		c.Burst = int(cfg.EventBurst)
	}); err != nil {
		return nil, err
	}
	if out.heartbeat, err = mk(func(c *rest.Config) {
		c.QPS = -1 // never wait behind other requests
		c.Timeout = cfg.NodeStatusUpdateFrequency.Duration
		if lease := time.Duration(cfg.NodeLeaseDurationSeconds) * time.Second; lease > 0 && (c.Timeout == 0 || c.Timeout > lease) {
			c.Timeout = lease
		}
	}); err != nil {
		return nil, err
	}
	return &out, nil
}

var _ events.Sink = kubeclient.EventSink{}

// eventRecorder sends events to sink (the API server, or the standalone
// node's Ring) through our broadcaster until ctx ends.
func eventRecorder(ctx context.Context, sink events.Sink, nodeName string, clk clock.Clock) *events.Broadcaster {
	b := events.NewBroadcaster(events.BroadcasterConfig{
		Sink:   sink,
		Scheme: kubeclient.Scheme,
		Clock:  clk,
		Source: v1.EventSource{Component: "kubelet", Host: nodeName},
	})
	go b.Run(ctx)
	return b
}
