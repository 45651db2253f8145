package syncloop

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/runtime/pleg"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// Handler reacts to what the loop receives.
type Handler interface {
	HandlePodUpdate(ctx context.Context, u sources.PodUpdate)
	HandlePLEGEvent(ctx context.Context, e pleg.Event)
	HandleSyncTick(ctx context.Context)
	HandleHousekeeping(ctx context.Context)
}

// Iteration waits for one input and handles it. It returns false when the
// loop must stop (ctx ended or the config channel closed).
func Iteration(ctx context.Context, configCh <-chan sources.PodUpdate, plegCh <-chan pleg.Event,
	syncCh, housekeepingCh <-chan time.Time, h Handler) bool {
	select {
	case <-ctx.Done():
		return false
	case u, ok := <-configCh:
		if !ok {
			klog.ErrorS(nil, "Pod config channel closed, stopping the sync loop")
			return false
		}
		klog.V(2).InfoS("SyncLoop", "op", u.Op.String(), "source", u.Source, "pods", len(u.Pods))
		h.HandlePodUpdate(ctx, u)
	case e := <-plegCh:
		klog.V(3).InfoS("SyncLoop (PLEG)", "podUID", e.ID, "event", e.Type, "data", e.Data, "source", e.Source)
		h.HandlePLEGEvent(ctx, e)
	case <-syncCh:
		h.HandleSyncTick(ctx)
	case <-housekeepingCh:
		if len(configCh) > 0 {
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
	Config       <-chan sources.PodUpdate
	PLEG         <-chan pleg.Event
	Sync         <-chan time.Time
	Housekeeping <-chan time.Time
}

// Run loops until ctx ends.
func Run(ctx context.Context, ch Channels, h Handler) {
	klog.InfoS("Starting kubelet main sync loop")
	for Iteration(ctx, ch.Config, ch.PLEG, ch.Sync, ch.Housekeeping, h) {
	}
}
