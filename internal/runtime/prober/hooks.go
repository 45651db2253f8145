package prober

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// RunHook runs a lifecycle handler (postStart or preStop) of a container:
// exec and httpGet as a probe of the same kind would, sleep by waiting.
// It returns an error when the handler failed, with its output.
func RunHook(ctx context.Context, h *v1.LifecycleHandler, c *v1.Container, containerID, podIP string, rt Runtime, clk clock.Clock, timeout time.Duration) error {
	if h.Sleep != nil {
		select {
		case <-clk.After(time.Duration(h.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	secs := int32(timeout / time.Second)
	if secs < 1 {
		secs = 1
	}
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}, TimeoutSeconds: secs}
	if h.Exec == nil && h.HTTPGet == nil && h.TCPSocket == nil {
		return fmt.Errorf("lifecycle handler has no action")
	}
	res, out, err := RunProbe(ctx, probe, nil, c, containerID, podIP, rt)
	if err != nil {
		return err
	}
	if res != Success {
		return fmt.Errorf("%s", out)
	}
	return nil
}
