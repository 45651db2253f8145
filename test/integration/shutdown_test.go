//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// logindConfDir is where the kubelet raises InhibitDelayMaxSec, as
// upstream (inert on this machine: no systemd runs).
const logindConfDir = "/etc/systemd/logind.conf.d"

// keepLogindDropIn removes the kubelet's logind drop-in (and the
// directory, if the test made it) when the test ends.
func keepLogindDropIn(t *testing.T) {
	_, err := os.Stat(logindConfDir)
	madeDir := os.IsNotExist(err)
	dropIn := filepath.Join(logindConfDir, "99-kubelet.conf")
	old, oldErr := os.ReadFile(dropIn)
	t.Cleanup(func() {
		if oldErr == nil {
			os.WriteFile(dropIn, old, 0o644)
			return
		}
		os.Remove(dropIn)
		if madeDir {
			os.Remove(logindConfDir)
		}
	})
}

// shutdownPod is a pod that ignores SIGTERM, so it takes its whole grace
// period to stop (the shutdown's budget, or its own when shorter).
func shutdownPod(name string, priority int32, grace int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  priority: %d
  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
`, name, priority, grace, framework.BusyboxImage)
}

func terminated(p *v1.Pod) *v1.ContainerStateTerminated {
	if len(p.Status.ContainerStatuses) == 0 {
		return nil
	}
	return p.Status.ContainerStatuses[0].State.Terminated
}

// Graceful node shutdown on a real dbus-daemon with a logind stand-in
// (the only fake: the machine cannot reboot). logind allows 2 s, less than
// shutdownGracePeriod: the kubelet writes its drop-in and reloads logind,
// as upstream, then takes a delay lock. On PrepareForShutdown(true) the
// regular pod stops first within its 3 s, the critical pod after it within
// its own 2 s, both reported Failed/Terminated with the DisruptionTarget
// condition, and the lock is released once they stopped; new pods are
// rejected meanwhile. PrepareForShutdown(false) takes the lock again and
// pods are admitted again.
func TestGracefulNodeShutdown(t *testing.T) {
	keepLogindDropIn(t)
	bus := framework.PrivateSystemBus(t)
	logind := framework.NewLogind(t, bus, 2*time.Second, logindConfDir)

	k := framework.NewKubelet(t, "shutdownGracePeriod: 6s", "shutdownGracePeriodCriticalPods: 3s")
	k.Env = append(k.Env, "DBUS_SYSTEM_BUS_ADDRESS="+bus)
	k.WriteManifest("regular.yaml", shutdownPod("regular", 0, 30))
	k.WriteManifest("critical.yaml", shutdownPod("critical", 2000001000, 2))
	k.Start()
	k.WaitForPod("regular", podTimeout, "running", running)
	k.WaitForPod("critical", podTimeout, "running", running)
	framework.Eventually(t, 10*time.Second, 50*time.Millisecond, "a delay inhibitor lock", func() (bool, error) {
		locks := logind.Locks()
		return len(locks) == 1 && locks[0].Held(), fmt.Errorf("locks %+v", locks)
	})
	lock := logind.Locks()[0]
	if lock.What != "shutdown" || lock.Who != "kubelet" || lock.Why != "Kubelet needs time to handle node shutdown" || lock.Mode != "delay" {
		t.Errorf("inhibitor lock %+v", lock)
	}
	if got := logind.InhibitDelay(); got != 6*time.Second {
		t.Errorf("InhibitDelayMaxSec after the kubelet's override: %v, want 6s", got)
	}

	start := time.Now()
	logind.PrepareForShutdown(true)
	regular := k.WaitForPod("regular", 15*time.Second, "terminated by the shutdown", func(p *v1.Pod) bool { return terminated(p) != nil })
	critical := k.WaitForPod("critical", 15*time.Second, "terminated by the shutdown", func(p *v1.Pod) bool { return terminated(p) != nil })
	rEnd, cEnd := terminated(regular).FinishedAt.Time, terminated(critical).FinishedAt.Time
	t.Logf("regular stopped %v after the signal, critical %v", rEnd.Sub(start).Round(100*time.Millisecond), cEnd.Sub(start).Round(100*time.Millisecond))
	// Container times have a second's resolution.
	if d := rEnd.Sub(start); d < 2*time.Second || d > 5*time.Second {
		t.Errorf("regular pod stopped %v after the signal, want its 3 s", d)
	}
	if d := cEnd.Sub(rEnd); d < time.Second || d > 4*time.Second {
		t.Errorf("critical pod stopped %v after the regular one, want after it, within its own 2 s", d)
	}
	for _, name := range []string{"regular", "critical"} {
		p := k.WaitForPod(name, 10*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		if p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("%s: reason %q message %q", p.Name, p.Status.Reason, p.Status.Message)
		}
		var found bool
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				found = c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet" && c.Message == p.Status.Message
			}
		}
		if !found {
			t.Errorf("%s: no DisruptionTarget condition from the kubelet: %+v", p.Name, p.Status.Conditions)
		}
	}
	framework.Eventually(t, 10*time.Second, 50*time.Millisecond, "the lock released", func() (bool, error) {
		return !logind.Locks()[0].Held(), nil
	})
	if rel := logind.Locks()[0].Released; rel.Sub(start) > 7*time.Second {
		t.Errorf("lock released %v after the signal, beyond shutdownGracePeriod", rel.Sub(start))
	}

	// While shutting down, new pods are rejected.
	k.WriteManifest("late.yaml", shutdownPod("late", 0, 1))
	framework.Eventually(t, 30*time.Second, 100*time.Millisecond, "the late pod rejected", func() (bool, error) {
		return logHas(k, `"Pod rejected at admission" pod="default/late-`+k.NodeName+`" podUID="[^"]+" reason="NodeShutdown" message="Pod was rejected as the node is shutting down."`), nil
	})

	// Cancelled: the lock is taken again, pods are admitted again.
	logind.PrepareForShutdown(false)
	framework.Eventually(t, 10*time.Second, 50*time.Millisecond, "a new lock", func() (bool, error) {
		locks := logind.Locks()
		return len(locks) == 2 && locks[1].Held(), nil
	})
	k.WriteManifest("after.yaml", shutdownPod("after", 0, 1))
	k.WaitForPod("after", podTimeout, "running after the cancelled shutdown", running)
	for _, want := range []string{`reason="NodeShutdown" message="Shutdown manager detected shutdown event"`, `reason="NodeShutdown" message="Shutdown manager detected shutdown cancellation"`} {
		if !logHas(k, want) {
			t.Errorf("no event %s in the log", want)
		}
	}
}
