package pleg

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestHealthCheck(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	p := New(Config{Lister: &fakeLister{}, Clock: clk, RelistThreshold: time.Minute})
	if err := p.HealthCheck(); err != nil {
		t.Fatalf("unhealthy before the first relist: %v", err)
	}
	p.Relist(context.Background())
	clk.Step(time.Minute)
	if err := p.HealthCheck(); err != nil {
		t.Fatalf("unhealthy at the threshold: %v", err)
	}
	clk.Step(time.Second)
	if err := p.HealthCheck(); err == nil || err.Error() != "pleg was last seen active 1m1s ago; threshold is 1m0s" {
		t.Fatalf("HealthCheck = %v", err)
	}
}
