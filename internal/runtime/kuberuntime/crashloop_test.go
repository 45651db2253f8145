package kuberuntime

import (
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A container that keeps failing is restarted after 10s, 20s, 40s, ...
// capped at 5m, counted from when it exited, as upstream's crash-loop
// back-off; while it waits the sync reports CrashLoopBackOff with upstream's
// message and asks to be woken when the back-off ends.
func TestCrashLoopBackOff(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("foo1")
	e.cri.Images.SetFakeImages([]string{"busybox"})
	e.sync(pod, nil)
	attempt := uint32(0)
	crash := func(ran time.Duration) {
		e.clk.Step(ran)
		e.exit(pod, 0, "foo1", attempt, 1)
	}
	restarted := func(t *testing.T) {
		t.Helper()
		attempt++
		checkSync(t, e, pod, e.sync(pod, nil), syncWant{calls: []string{"CreateContainer", "StartContainer"},
			started: []string{"foo1"}, running: []string{fmt.Sprintf("foo1/0/%d", attempt)}, changed: true})
	}
	backingOff := func(t *testing.T, delay, left time.Duration) {
		t.Helper()
		msg := fmt.Sprintf("back-off %v restarting failed container=foo1 pod=foo_new(12345678)", delay)
		res := e.sync(pod, nil)
		checkSync(t, e, pod, res, syncWant{failures: map[string]string{"foo1": ReasonCrashLoopBackOff},
			events:  []string{"Warning BackOff Back-off restarting failed container foo1 in pod foo_new(12345678)"},
			err:     msg,
			changed: true, requeue: left})
		if got := res.Failures["foo1"].Message; got != msg {
			t.Errorf("waiting message %q, want %q", got, msg)
		}
	}

	t.Run("first crash: restarted at once", func(t *testing.T) {
		crash(time.Second)
		restarted(t)
	})
	for _, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second} {
		t.Run(fmt.Sprintf("crash again: back-off %v", delay), func(t *testing.T) {
			crash(time.Second)
			backingOff(t, delay, delay)
			e.clk.Step(delay / 2)
			backingOff(t, delay, delay-delay/2)
			e.clk.Step(delay - delay/2)
			restarted(t)
		})
	}
	t.Run("a run longer than twice the cap resets the back-off", func(t *testing.T) {
		crash(601 * time.Second)
		restarted(t)
		crash(time.Second)
		backingOff(t, 10*time.Second, 10*time.Second)
	})
	if st, _ := e.cri.SandboxState(sandboxID(pod, 0)); st != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("the sandbox is %v; a crash loop must keep it", st)
	}
}
