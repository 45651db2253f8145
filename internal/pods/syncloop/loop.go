package syncloop

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
	"github.com/seed-kubelet/kubelet/internal/runtime/prober"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// Handler reacts to what the loop receives.
type Handler interface {
	HandlePodUpdate(ctx context.Context, u sources.PodUpdate)
	HandlePLEGEvent(ctx context.Context, e pleg.Event)
	HandleProbeUpdate(ctx context.Context, u prober.Update)
	HandleSyncTick(ctx context.Context)
	HandleHousekeeping(ctx context.Context)
}

// Iteration waits for one input and handles it. It returns false when the
// loop must stop (ctx ended or the config channel closed). Nil channels
// are never ready.
func Iteration(ctx context.Context, ch Channels, h Handler) bool {
	select {
	case <-ctx.Done():
		return false
	case u, ok := <-ch.Config:
		if !ok {
			klog.ErrorS(nil, "Pod config channel closed, stopping the sync loop")
			return false
		}
		klog.V(2).InfoS("SyncLoop", "op", u.Op.String(), "source", u.Source, "pods", len(u.Pods))
		h.HandlePodUpdate(ctx, u)
	case e := <-ch.PLEG:
		klog.V(3).InfoS("SyncLoop (PLEG)", "podUID", e.ID, "event", e.Type, "data", e.Data, "source", e.Source)
		h.HandlePLEGEvent(ctx, e)
	case u := <-ch.Probes:
		klog.V(3).InfoS("SyncLoop (probe)", "podUID", u.PodUID, "container", u.ContainerName, "probe", u.Type.String(), "result", u.Result.String())
		h.HandleProbeUpdate(ctx, u)
	case <-ch.Sync:
		h.HandleSyncTick(ctx)
	case <-ch.Housekeeping:
		if len(ch.Config) > 0 {
			// Pods a source already delivered are not handled yet: cleaning
			// up now could kill them as orphans. Skip this round.
			return true
		}
		h.HandleHousekeeping(ctx)
	}
	return true
}

// Channels are the loop's inputs.
type Channels struct {
	Config <-chan sources.PodUpdate
	PLEG   <-chan pleg.Event
	// Probes carries the prober's result changes.
	Probes       <-chan prober.Update
	Sync         <-chan time.Time
	Housekeeping <-chan time.Time
}

// Run loops until ctx ends.
func Run(ctx context.Context, ch Channels, h Handler) {
	klog.InfoS("Starting kubelet main sync loop")
	for Iteration(ctx, ch, h) {
	}
}
