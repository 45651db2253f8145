package podsync

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A sidecar with a startup probe holds back the app containers until the
// probe succeeded, as upstream ("Probing restartable init container should
// be ready immediately after startupProbe succeeds" checks that the app
// container did not start early).
func TestSidecarStartupProbeGatesAppContainers(t *testing.T) {
	probes := &fakeProbes{notStarted: map[string]bool{"proxy": true}}
	e := newEnv(t, func(c *Config) { c.Probes = probes })
	pod := addSidecar(newPod("app"), "proxy")
	pod.Spec.InitContainers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}

	e.s.SyncPod(e.ctx, pod) // the sidecar starts
	e.s.SyncPod(e.ctx, pod) // it runs, its startup probe has not succeeded
	if got := states(e.published(pod))["app"]; got != "waiting PodInitializing" {
		t.Fatalf("app is %q before the sidecar started, want waiting PodInitializing", got)
	}
	probes.notStarted = nil // the startup probe succeeded
	e.s.SyncPod(e.ctx, pod)
	if got := states(e.published(pod))["app"]; got != "running ready" {
		t.Fatalf("app is %q once the sidecar started, want running", got)
	}
}
