package backoff

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Upstream's values (pkg/kubelet/kubelet.go).
const (
	// CrashLoopInitial and CrashLoopMax bound the delay before a failed
	// container is restarted.
	CrashLoopInitial = 10 * time.Second
	CrashLoopMax     = 300 * time.Second
	// crashLoopReset is upstream's fixed quiet period after which a
	// container's back-off starts again.
	crashLoopReset = 600 * time.Second
	// ImagePullInitial and ImagePullMax bound the delay between pulls of an
	// image that failed.
	ImagePullInitial = 10 * time.Second
	ImagePullMax     = 300 * time.Second
)

// New returns a back-off from initial doubling up to max on clk.
func New(initial, max time.Duration, clk clock.Clock) *flowcontrol.Backoff {
	// NewFakeBackOff is client-go's only constructor that takes a clock.
	return flowcontrol.NewFakeBackOff(initial, max, clk)
}

// NewCrashLoop is the container restart back-off.
func NewCrashLoop(clk clock.Clock) *flowcontrol.Backoff {
	b := New(CrashLoopInitial, CrashLoopMax, clk)
	b.HasExpiredFunc = func(eventTime, lastUpdate time.Time, _ time.Duration) bool {
		return eventTime.Sub(lastUpdate) > crashLoopReset
	}
	return b
}

// NewImagePull is the image pull back-off.
func NewImagePull(clk clock.Clock) *flowcontrol.Backoff {
	return New(ImagePullInitial, ImagePullMax, clk)
}

// Remaining is how long id must still wait after a failure at eventTime:
// its current delay less the time since, zero when it may go ahead now.
func Remaining(b *flowcontrol.Backoff, id string, eventTime time.Time) time.Duration {
	if !b.IsInBackOffSince(id, eventTime) {
		return 0
	}
	return b.Get(id) - b.Clock.Since(eventTime)
}

// Doubling is a delay sequence for retry loops: initial, then doubled on
// each Step up to max, where it stays.
func Doubling(initial, max time.Duration) wait.Backoff {
	return wait.Backoff{Duration: initial, Factor: 2, Cap: max, Steps: math.MaxInt32}
}

// Sleep waits d on clk between two tries; it returns false, at once, when
// ctx ends first.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
