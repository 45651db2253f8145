package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

func TestRestoredPod(t *testing.T) {
	grace := int64(7)
	hook := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
	st := &PodStatus{UID: "u", Name: "p", Namespace: "ns"}
	pod := RestoredPod(st, &ContainerStatus{Name: "c", GracePeriod: &grace, PreStop: hook})
	if pod.Name != "p" || pod.Namespace != "ns" || pod.UID != "u" || GracePeriod(pod, nil) != 7 {
		t.Fatalf("restored pod %+v", pod)
	}
	c := criconfig.FindContainer(pod, "c")
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop != hook {
		t.Fatalf("restored container %+v", c)
	}
	bare := RestoredPod(st, &ContainerStatus{Name: "c"})
	if c := criconfig.FindContainer(bare, "c"); c == nil || c.Lifecycle != nil || GracePeriod(bare, nil) != 30 {
		t.Fatalf("a container without a hook or grace period: %+v", bare)
	}
}
