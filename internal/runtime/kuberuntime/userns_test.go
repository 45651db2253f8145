package kuberuntime

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/runtime/userns"
)

func usernsEnv(t *testing.T, handlers ...*runtimeapi.RuntimeHandler) (*env, *metrics.Metrics) {
	t.Helper()
	met := metrics.New()
	var mgr *userns.Manager
	e := newEnv(t, func(c *Config, _ *ImageConfig) {
		c.Metrics = met
		c.Spec.UserNamespace = func(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
			return mgr.Options(context.Background(), pod, "")
		}
	})
	e.cri.SetRuntimeHandlers(handlers...)
	var err error
	mgr, err = userns.New(userns.Config{PodsDir: e.cfg.PodsDir, MaxPods: 110, FirstID: 65536, Length: 65536 * 1000, Runtime: e.cri.RuntimeClient})
	if err != nil {
		t.Fatal(err)
	}
	return e, met
}

// A hostUsers: false pod on a runtime that supports user namespaces gets
// its own mappings on the sandbox and its containers, and every mount is
// idmapped with them (upstream's applyPlatformSpecificContainerConfig).
func TestSyncPodUserNamespace(t *testing.T) {
	e, met := usernsEnv(t, &runtimeapi.RuntimeHandler{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}})
	pod := newPod("app")
	no := false
	pod.Spec.HostUsers = &no
	pod.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	if res := e.sync(pod, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	runs := e.cri.SandboxRuns()
	if len(runs) != 1 {
		t.Fatalf("sandboxes %d", len(runs))
	}
	sb := runs[0].Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	if sb.GetMode() != runtimeapi.NamespaceMode_POD || len(sb.Uids) != 1 || sb.Uids[0].ContainerId != 0 || sb.Uids[0].Length != 65536 || sb.Uids[0].HostId < 65536 {
		t.Fatalf("sandbox userns %v", sb)
	}
	cfg := e.cri.Creates()[0].Config
	if got := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got.GetUids()[0].GetHostId() != sb.Uids[0].HostId {
		t.Fatalf("container userns %v, want the sandbox's", got)
	}
	if len(cfg.Mounts) == 0 {
		t.Fatal("no mounts to check")
	}
	for _, m := range cfg.Mounts {
		if len(m.UidMappings) != 1 || m.UidMappings[0].HostId != sb.Uids[0].HostId || len(m.GidMappings) != 1 {
			t.Errorf("mount %s not idmapped: %v %v", m.ContainerPath, m.UidMappings, m.GidMappings)
		}
	}
	if v := testutil.ToFloat64(met.StartedUserNamespacedPods); v != 1 {
		t.Errorf("started_user_namespaced_pods_total %v", v)
	}
}

// On containerd 1.6 (no runtime handlers in its status) the pod gets
// upstream's FailedCreatePodSandBox event and error, and no sandbox.
func TestSyncPodUserNamespaceUnsupported(t *testing.T) {
	e, met := usernsEnv(t)
	pod := newPod("app")
	no := false
	pod.Spec.HostUsers = &no
	res := e.sync(pod, nil)
	want := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
		t.Fatalf("err %v", res.Err)
	}
	if runs := e.cri.SandboxRuns(); len(runs) != 0 {
		t.Fatalf("created %d sandboxes", len(runs))
	}
	evs := e.events()
	if len(evs) != 1 || evs[0] != "Warning FailedCreatePodSandBox Failed to create pod sandbox: "+want {
		t.Fatalf("events %q", evs)
	}
	if v := testutil.ToFloat64(met.StartedUserNamespacedPodsErrors); v != 1 {
		t.Errorf("started_user_namespaced_pods_errors_total %v", v)
	}
}
