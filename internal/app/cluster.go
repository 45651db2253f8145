package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/node/nodelease"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/admission"
	"github.com/seed-kubelet/kubelet/internal/pods/mirror"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/pods/statusmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/syncloop"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// clients are the kubelet's API connections, as upstream splits them: the
// main client, one for events (its own rate limit) and one for heartbeats
// (node status and lease: no rate limit, a short timeout).
type clients struct {
	main, events, heartbeat kubeclient.Interface
}

func newClients(kubeconfig string, cfg *kubeletconfig.KubeletConfiguration) (*clients, error) {
	base, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
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

// eventRecorder sends events to the API through client-go's broadcaster.
func eventRecorder(ctx context.Context, client kubeclient.Interface, nodeName string) events.Recorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(kubeclient.EventSink{Core: client.CoreV1()})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b.NewRecorder(kubeclient.Scheme, v1.EventSource{Component: "kubelet", Host: nodeName})
}

// statusTargets maps a pod UID to the API object its status goes to: the
// pod, the mirror pod of a static pod, or a pod that admission rejected.
type statusTargets struct {
	pods     *podmanager.Manager
	mu       sync.Mutex
	rejected map[types.UID]*v1.Pod
}

func (s *statusTargets) reject(p *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rejected == nil {
		s.rejected = map[types.UID]*v1.Pod{}
	}
	s.rejected[p.UID] = p
}

func (s *statusTargets) target(uid types.UID) (statusmanager.Target, bool) {
	p, ok := s.pods.Get(uid)
	if !ok {
		s.mu.Lock()
		p, ok = s.rejected[uid]
		s.mu.Unlock()
		if !ok {
			return statusmanager.Target{}, false
		}
	}
	if podmanager.IsStatic(p) {
		mp, ok := s.pods.Mirror(p)
		if !ok {
			return statusmanager.Target{}, false
		}
		return statusmanager.Target{Namespace: mp.Namespace, Name: mp.Name, UID: mp.UID}, true
	}
	return statusmanager.Target{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, true
}

// rejectedStatus is the status of a pod that admission refused, as upstream.
func rejectedStatus(reason, message string, now time.Time) v1.PodStatus {
	t := metav1.NewTime(now)
	return v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: message, StartTime: &t}
}

// runningPods lists the pods the runtime runs, as /runningpods/ shows them:
// identity and containers, no spec from a source.
func runningPods(ctx context.Context, rt interface {
	GetPods(ctx context.Context, all bool) ([]*kuberuntime.RunningPod, error)
}) ([]v1.Pod, error) {
	pods, err := rt.GetPods(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]v1.Pod, 0, len(pods))
	for _, rp := range pods {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rp.Name, Namespace: rp.Namespace, UID: rp.UID}}
		for _, c := range rp.Containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
		}
		out = append(out, p)
	}
	return out, nil
}

// clusterDeps is what the cluster-mode loops need.
type clusterDeps struct {
	cfg      *kubeletconfig.KubeletConfiguration
	nodeName string
	clock    clock.WithTicker
	clients  *clients
	recorder events.Recorder
	inputs   *nodeInputs
	node     *nodeState
	pods     *podmanager.Manager
	statuses *statusmanager.Manager
	workers  *podworkers.PodWorkers
	mirrors  *mirror.Manager
	// pressureAdmit is the eviction manager's admission check.
	pressureAdmit func(*v1.Pod) (bool, string, string)
	sysctls       *admission.SysctlAllowlist
}

// startCluster starts what a node of a cluster runs beside the sync loop
// (status sync with the deletion handshake, node status, lease) and fills
// in the dispatcher's cluster hooks (mirror pods, admission against the
// API's Node, rejections written as pod statuses).
func startCluster(ctx context.Context, d clusterDeps, dcfg *syncloop.DispatcherConfig) {
	targets := &statusTargets{pods: d.pods}
	go d.statuses.RunAPISync(ctx, statusmanager.APISyncConfig{
		Client: d.clients.main, Clock: d.clock, ResyncPeriod: 10 * time.Second, Target: targets.target,
		Terminated: func(uid types.UID) bool {
			s, ok := d.workers.States()[uid]
			return ok && s.State == podworkers.Terminated
		},
	})
	dcfg.Mirrors = d.mirrors
	dcfg.StatusChanged = d.statuses.Kick
	dcfg.Reject = func(p *v1.Pod, reason, message string) {
		targets.reject(p)
		d.statuses.Set(p, rejectedStatus(reason, message, d.clock.Now()))
		d.recorder.Eventf(p, v1.EventTypeWarning, reason, "%s", message)
	}
	nc := nodestatus.New(nodestatus.Config{
		Client: d.clients.heartbeat, NodeName: d.nodeName, Clock: d.clock, Inputs: d.inputs.Inputs,
		UpdateFrequency: d.cfg.NodeStatusUpdateFrequency.Duration, ReportFrequency: d.cfg.NodeStatusReportFrequency.Duration,
		RegisterNode: derefBool(d.cfg.RegisterNode, true), Recorder: d.recorder,
		OnRegistered: func(n *v1.Node) {
			d.node.set(n)
			// Static pods waited for the Node's UID to write mirror pods.
			for _, sp := range d.pods.List() {
				if podmanager.IsStatic(sp) {
					d.workers.Sync(sp.UID)
				}
			}
		},
	})
	d.node.setTrigger(nc.Trigger)
	d.node.setFromAPI(nc.Node)
	go nc.Run(ctx)
	d.recorder.Eventf(nodestatus.NodeRef(d.nodeName), v1.EventTypeNormal, events.StartingKubelet, "Starting kubelet.")
	// Admission follows the Node the API server has (labels, taints).
	dcfg.Admit = admitter(d.sysctls, func() *v1.Node {
		if n, ok := nc.Node(); ok {
			return n
		}
		return d.node.get()
	}, d.pressureAdmit)
	go nodelease.New(nodelease.Config{
		Client: d.clients.heartbeat, NodeName: d.nodeName, Clock: d.clock,
		LeaseDurationSeconds: d.cfg.NodeLeaseDurationSeconds, NodeUID: nc.NodeUID,
	}).Run(ctx)
}
