package cri

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// flaky fails Version until ok, and answers Status with status.
type flaky struct {
	mu     sync.Mutex
	calls  int
	okFrom int
	status *runtimeapi.StatusResponse
	err    error
	asked  chan struct{}
}

func (f *flaky) Version(context.Context, *runtimeapi.VersionRequest, ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls < f.okFrom {
		return nil, errors.New("connection refused")
	}
	return &runtimeapi.VersionResponse{RuntimeName: "containerd"}, nil
}

func (f *flaky) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	resp, err := f.status, f.err
	f.mu.Unlock()
	f.asked <- struct{}{}
	return resp, err
}

func stepWhenWaiting(clk *testingclock.FakeClock, d time.Duration) {
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.Step(d)
}

func TestWaitForRuntimeBacksOff(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	rt := &flaky{okFrom: 4}
	done := make(chan *runtimeapi.VersionResponse, 1)
	go func() {
		v, err := WaitForRuntime(context.Background(), rt, clk)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	for _, d := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		stepWhenWaiting(clk, d)
	}
	if v := <-done; v.GetRuntimeName() != "containerd" || rt.calls != 4 {
		t.Fatalf("version %v after %d calls", v, rt.calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WaitForRuntime(ctx, &flaky{okFrom: 100}, clk); err == nil {
		t.Fatal("no error once ctx ended")
	}
}

func TestHealth(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	rt := &flaky{asked: make(chan struct{}), status: &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{
		Conditions: []*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: false, Reason: "Starting", Message: "not yet"}}}}}
	h := NewHealth(HealthConfig{Runtime: rt, Clock: clk})
	if err := h.HealthCheck(); err != nil {
		t.Fatalf("unhealthy before the first poll: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	<-rt.asked
	stepWhenWaiting(clk, 0) // the first answer is stored before Run waits
	if err := h.HealthCheck(); err == nil || err.Error() != "container runtime is not ready: Starting: not yet" {
		t.Fatalf("HealthCheck = %v", err)
	}
	expectChanged(t, h, true)
	rt.mu.Lock()
	rt.status, rt.err = nil, errors.New("connection refused")
	rt.mu.Unlock()
	stepWhenWaiting(clk, UnhealthyPeriod) // asked again soon while unhealthy
	<-rt.asked
	stepWhenWaiting(clk, 0)
	if err := h.HealthCheck(); err == nil || err.Error() != "container runtime is down: connection refused" {
		t.Fatalf("HealthCheck = %v", err)
	}
	expectChanged(t, h, false) // still unhealthy: no change
	rt.mu.Lock()
	rt.status, rt.err = &runtimeapi.StatusResponse{}, nil
	rt.mu.Unlock()
	stepWhenWaiting(clk, UnhealthyPeriod)
	<-rt.asked
	stepWhenWaiting(clk, 0)
	if err := h.HealthCheck(); err != nil {
		t.Fatalf("HealthCheck = %v after the runtime came back", err)
	}
	expectChanged(t, h, true)
	stepWhenWaiting(clk, HealthPeriod) // healthy: asked every HealthPeriod
	<-rt.asked
}

func expectChanged(t *testing.T, h *Health, want bool) {
	t.Helper()
	select {
	case <-h.Changed():
		if !want {
			t.Fatal("Changed signalled without a change of health")
		}
	default:
		if want {
			t.Fatal("Changed not signalled")
		}
	}
}
