package app

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/api/localapi"
	"github.com/seed-kubelet/kubelet/internal/api/logs"
	"github.com/seed-kubelet/kubelet/internal/api/server"
	"github.com/seed-kubelet/kubelet/internal/api/streaming"
	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/localobjects"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/syncloop"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// podsChanged is poked (never blocking) when the pods the local API serves
// may have changed; a nil one ignores pokes.
type podsChanged chan struct{}

func (c podsChanged) poke() {
	select {
	case c <- struct{}{}:
	default:
	}
}

// notifying is the sync loop's handler in standalone mode: the dispatcher,
// poking the local API after pod updates and housekeeping (pods added,
// removed, forgotten).
type notifying struct {
	*syncloop.Dispatcher
	changed podsChanged
}

func (n notifying) HandlePodUpdate(ctx context.Context, u sources.PodUpdate) {
	n.Dispatcher.HandlePodUpdate(ctx, u)
	n.changed.poke()
}

func (n notifying) HandleHousekeeping(ctx context.Context) {
	n.Dispatcher.HandleHousekeeping(ctx)
	n.changed.poke()
}

// localAPIConfig is what the local API reads beside the servers' inputs.
type localAPIConfig struct {
	workers     *podworkers.PodWorkers
	objects     *localobjects.Store
	podsChanged podsChanged
	static      nodestatus.Inputs
	nodeSource  *nodestatus.Source
}

// startLocalAPI serves the kubectl-compatible local API on
// --local-api-address (standalone mode), with its kubeconfig under
// <root-dir>/local-api.
func startLocalAPI(ctx context.Context, b *base, s serverConfig, logsCfg logs.Config, apiCfg server.APIConfig) error {
	addr := b.flags.LocalAPIAddress
	if addr == "" || s.local == nil {
		return nil
	}
	l := s.local
	cfg := b.cfg
	started := metav1.NewTime(b.clock.Now())
	lc := localapi.Config{
		NodeName: b.host.nodeName, StaticPodPath: cfg.StaticPodPath, ObjectsDir: b.flags.LocalObjectsDir,
		Pods: s.pods, Statuses: s.statuses, Workers: l.workers, PodsChanged: l.podsChanged,
		Objects: l.objects, Events: b.events, Clock: b.clock,
		Node: func(ctx context.Context) *v1.Node {
			n := s.node.Node().DeepCopy()
			if in, err := l.nodeSource.Inputs(ctx); err == nil {
				nodestatus.SetStatus(n, in, b.clock.Now())
			}
			n.CreationTimestamp = started
			return n
		},
		Version: version.Info{
			Major: "1", Minor: "36", GitVersion: options.Version, GoVersion: runtime.Version(),
			Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
		},
	}
	if lc.ObjectsDir == "" {
		lc.ObjectsDir = cfg.StaticPodPath
	}
	if apiCfg.Debug.Enabled {
		lc.ContainerLogs = logs.ContainerLogsHandler(logsCfg)
		lc.Streaming = streaming.Handler(streaming.Config{
			Pods: s.pods, Runtime: b.cri.Runtime, StreamIdleTimeout: cfg.StreamingConnectionIdleTimeout.Duration,
		})
	} else {
		lc.ContainerLogs = debuggingDisabled()
		lc.Streaming = debuggingDisabled()
	}
	creds, err := localapi.EnsureCredentials(localapi.CredentialsConfig{
		Dir: filepath.Join(b.flags.RootDirectory, "local-api"), Address: addr,
		Hosts: append([]string{b.host.nodeName}, b.host.ips...), Now: b.clock.Now(),
	})
	if err != nil {
		return err
	}
	api := localapi.New(lc)
	go api.Run(ctx)
	if err := server.ServeTLS(ctx, "local API", addr, api, creds.TLS); err != nil {
		return err
	}
	klog.InfoS("Serving the local API for kubectl", "address", addr, "kubeconfig", creds.Kubeconfig)
	return nil
}

// debuggingDisabled answers as the kubelet API does with
// enableDebuggingHandlers off.
func debuggingDisabled() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
	})
}
