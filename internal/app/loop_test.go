package app

import (
	"context"
	"testing"
	"time"
)

// The node status wakes on any of its inputs.
func TestNodeStatusWakeOnEither(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := make(chan struct{}), make(chan struct{})
	out := nodeStatusWake(ctx, nil, a, b)
	for _, ch := range []chan struct{}{a, b} {
		ch <- struct{}{}
		select {
		case <-out:
		case <-time.After(5 * time.Second):
			t.Fatal("no wake")
		}
	}
}
