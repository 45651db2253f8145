package pullprogress

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/events"
)

// sampleTimeout bounds one sample's calls to the runtime.
const sampleTimeout = 5 * time.Second

// Source opens the view of one pull in the runtime.
type Source interface {
	// Sampler returns the sampler of the pull of image that started at
	// since.
	Sampler(image string, since time.Time) Sampler
}

// Config configures a Reporter; every field is required.
type Config struct {
	Source   Source
	Recorder events.AnnotatedRecorder
	Clock    clock.WithTicker
}

// Reporter reports the progress of image pulls.
type Reporter struct {
	cfg Config
}

// New returns a Reporter.
func New(cfg Config) *Reporter { return &Reporter{cfg: cfg} }

// Watch reports the progress of the pull of image for pod, which starts
// now, until stop is called (when the pull ends; stop returns once no more
// update can be sent). Updates come at Interval: the pod's Pulling event
// (whose message is message) again, with a progress note, and a line at
// -v=2. A pull that ends within the first interval sends none.
func (r *Reporter) Watch(pod *v1.Pod, image, message string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	started := r.cfg.Clock.Now()
	sample := r.cfg.Source.Sampler(image, started)
	// Armed before Watch returns, so that a stepped fake clock finds it.
	timer := r.cfg.Clock.NewTimer(Interval(0))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer timer.Stop()
		r.run(ctx, timer, sample, started, pod, image, message)
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

func (r *Reporter) run(ctx context.Context, timer clock.Timer, sample Sampler, started time.Time, pod *v1.Pod, image, message string) {
	lastAt, lastFetched, updates := started, int64(0), 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		sctx, cancel := context.WithTimeout(ctx, sampleTimeout)
		p, err := sample(sctx)
		cancel()
		if ctx.Err() != nil {
			return // the pull ended meanwhile
		}
		now := r.cfg.Clock.Now()
		switch {
		case errors.Is(err, ErrUnsupported):
			klog.V(4).InfoS("Image pull progress unavailable", "pod", klog.KObj(pod), "image", image, "err", err)
			return
		case err != nil:
			klog.V(4).InfoS("Could not read image pull progress", "pod", klog.KObj(pod), "image", image, "err", err)
			timer.Reset(Interval(updates))
			continue
		}
		elapsed := now.Sub(lastAt)
		note := Note(p, lastFetched, elapsed)
		rate := Rate(p.Fetched-lastFetched, elapsed)
		lastAt, lastFetched = now, p.Fetched
		updates++
		// Re-armed before the update goes out: whoever sees it may step
		// the clock at once.
		timer.Reset(Interval(updates))
		klog.V(2).InfoS("Image pull progress", "pod", klog.KObj(pod), "image", image,
			"bytesDone", p.Done, "bytesTotal", p.Total, "bytesPerSecond", rate, "elapsed", now.Sub(started).Round(time.Second))
		events.Progressf(r.cfg.Recorder, pod, v1.EventTypeNormal, events.Pulling, note, "%s", message)
	}
}
