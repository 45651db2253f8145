//go:build integration

package integration

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// seccompPod has a container without a profile and one asking for
// Unconfined (each container's PID 1 is its own main process); the second
// pod shares its process namespace, so PID 1 is the sandbox's pause.
const seccompPod = `apiVersion: v1
kind: Pod
metadata:
  name: seccomp
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: plain
    image: %[1]s
    command: ["sleep", "3600"]
  - name: unconfined
    image: %[1]s
    command: ["sleep", "3600"]
    securityContext:
      seccompProfile: {type: Unconfined}
---
apiVersion: v1
kind: Pod
metadata:
  name: seccomp-shared
spec:
  terminationGracePeriodSeconds: 1
  shareProcessNamespace: true
  securityContext:
    seccompProfile: {type: Unconfined}
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "3600"]
`

// seccompMode is the Seccomp line of /proc/<pid>/status in the container:
// 0 disabled, 2 filtered.
func seccompMode(t *testing.T, p *v1.Pod, container, pid string) string {
	t.Helper()
	out, _ := execOut(t, p, container, false, "sh", "-c", "grep '^Seccomp:' /proc/"+pid+"/status | cut -f2")
	return out
}

// seccompDefault (--seccomp-default) runs every container without a
// profile as RuntimeDefault, as upstream; a container asking for
// Unconfined stays unconfined; the sandbox's pause process is always
// confined (upstream forces RuntimeDefault on the sandbox). Without
// seccompDefault a container without a profile is unconfined.
func TestSeccompDefault(t *testing.T) {
	for _, tc := range []struct {
		name      string
		config    []string
		wantPlain string
	}{
		{name: "seccompDefault true", config: []string{"seccompDefault: true"}, wantPlain: "2"},
		{name: "seccompDefault unset", wantPlain: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := framework.NewKubelet(t, tc.config...)
			k.WriteManifest("seccomp.yaml", fmt.Sprintf(seccompPod, framework.BusyboxImage))
			k.Start()
			p := k.WaitForPod("seccomp", podTimeout, "running", running)
			if got := seccompMode(t, p, "plain", "1"); got != tc.wantPlain {
				t.Errorf("container without a profile: Seccomp %q, want %q", got, tc.wantPlain)
			}
			if got := seccompMode(t, p, "unconfined", "1"); got != "0" {
				t.Errorf("container asking for Unconfined: Seccomp %q, want 0", got)
			}
			shared := k.WaitForPod("seccomp-shared", podTimeout, "running", running)
			// PID 1 of a shared process namespace is the sandbox's pause.
			if got := seccompMode(t, shared, "main", "1"); got != "2" {
				t.Errorf("pause process of the sandbox: Seccomp %q, want 2 (RuntimeDefault)", got)
			}
			if got := seccompMode(t, shared, "main", "self"); got != "0" {
				t.Errorf("container of a pod asking for Unconfined: Seccomp %q, want 0", got)
			}
		})
	}
}
