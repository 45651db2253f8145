package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An ephemeral container added to a running pod (kubectl debug) starts in
// the pod's sandbox without touching its other containers; with a target
// it joins that container's process namespace (CRI NamespaceMode TARGET
// with the target's container ID, as upstream); it is never started again.
func TestSyncPodStartsEphemeralContainers(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("app")
	if res := e.sync(pod, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	e.cri.Creates()
	appID := containerID(pod, 0, "app", 0)

	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent, Stdin: true, TTY: true},
		TargetContainerName:      "app",
	}}
	res := e.sync(debug, nil)
	if res.Err != nil || len(res.Started) != 1 || res.Started[0] != "debugger" {
		t.Fatalf("sync: started %v err %v, want debugger", res.Started, res.Err)
	}
	creates := e.cri.Creates()
	if len(creates) != 1 {
		t.Fatalf("CreateContainer calls = %d, want 1", len(creates))
	}
	cfg := creates[0].Config
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != appID {
		t.Errorf("pid namespace = %v target %q, want TARGET %q", ns.GetPid(), ns.GetTargetId(), appID)
	}
	if !cfg.Stdin || !cfg.Tty {
		t.Errorf("stdin %v tty %v, want both (kubectl debug -it attaches)", cfg.Stdin, cfg.Tty)
	}
	if got := cfg.Annotations["io.kubernetes.container.type"]; got != "ephemeral" {
		t.Errorf("container type annotation = %q, want ephemeral", got)
	}
	if s := e.state(debug, 0, "app", 0); s != "CONTAINER_RUNNING" {
		t.Errorf("app is %s, want it left running", s)
	}

	// Exited: it stays exited, whatever the pod's restart policy.
	e.exit(debug, 0, "debugger", 0, 0)
	if res := e.sync(debug, nil); res.Changed || len(res.Started) != 0 {
		t.Fatalf("sync after the debugger exited: %+v, want nothing done", res)
	}
}

// Without a target, or with shareProcessNamespace, the ephemeral container
// gets the pod's ordinary process namespace.
func TestEphemeralContainerWithoutTarget(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("app")
	share := true
	pod.Spec.ShareProcessNamespace = &share
	if res := e.sync(pod, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	e.cri.Creates()
	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent},
		TargetContainerName:      "app",
	}}
	if res := e.sync(debug, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	ns := e.cri.Creates()[0].Config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_POD || ns.GetTargetId() != "" {
		t.Errorf("pid namespace = %v target %q, want POD (the pod shares one)", ns.GetPid(), ns.GetTargetId())
	}
}
