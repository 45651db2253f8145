package auth

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// retryBackoff paces retries of a webhook call.
type retryBackoff = wait.Backoff

// defaultRetryBackoff is upstream's DefaultAuthWebhookRetryBackoff.
func defaultRetryBackoff() retryBackoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// shouldRetry reports the transient failures upstream's webhooks retry.
func shouldRetry(err error) bool {
	if err == nil {
		return false
	}
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, delay := apierrors.SuggestsClientDelay(err)
	return delay
}

// withRetry calls fn up to b.Steps times while it fails transiently,
// sleeping on the clock in between, and returns its last error.
func withRetry(ctx context.Context, clk clock.Clock, b retryBackoff, fn func() error) error {
	steps := b.Steps // b.Step counts it down
	for attempt := 1; ; attempt++ {
		err := fn()
		if !shouldRetry(err) || attempt >= steps {
			return err
		}
		if d := b.Step(); d > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-clk.After(d):
			}
		}
	}
}
