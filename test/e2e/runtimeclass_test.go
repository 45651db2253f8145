//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// testHandler is the second runc handler hack/setup-node.sh,
// hack/setup-containerd2.sh and hack/private-containerd.sh configure.
const testHandler = "runc-test"

func runtimeClass(t *testing.T, n *node, name, handler string) {
	t.Helper()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
	if _, err := n.client.NodeV1().RuntimeClasses().Create(ctxT(t), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.client.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// waitPodEvent waits for an event of the pod with reason whose message
// contains want, and returns it.
func waitPodEvent(t *testing.T, n *node, ns, pod, reason, want string) v1.Event {
	t.Helper()
	var found v1.Event
	eventually(t, 60*time.Second, fmt.Sprintf("%s event on %s mentioning %q", reason, pod, want), func() (bool, error) {
		var msgs []string
		for _, e := range podEvents(t, n, ns, pod, reason) {
			if strings.Contains(e.Message, want) {
				found = e
				return true, nil
			}
			msgs = append(msgs, e.Message)
		}
		return false, fmt.Errorf("events: %q", msgs)
	})
	return found
}

// stillPending checks that the pod has no sandbox-backed start: Pending,
// its container waiting in ContainerCreating.
func stillPending(t *testing.T, n *node, ns, name string) {
	t.Helper()
	p, err := n.client.CoreV1().Pods(ns).Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("pod %s phase %s, want Pending", name, p.Status.Phase)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("container %s state %+v, want waiting ContainerCreating", cs.Name, cs.State)
		}
	}
}

// A pod's runtimeClassName is resolved through node.k8s.io/v1 to its CRI
// handler: the sandbox runs with it (the runtime says so in
// PodSandboxStatus). An unknown handler and a class deleted before the pod
// reached the node each fail sandbox creation with upstream's
// FailedCreatePodSandBox event and leave the pod Pending.
func TestRuntimeClass(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	uniq := ifw.UniqueName("rc")
	pods := n.client.CoreV1().Pods(ns)

	t.Run("handler", func(t *testing.T) {
		name := uniq + "-test"
		runtimeClass(t, n, name, testHandler)
		pod := podOn(n.NodeName, "with-class")
		pod.Spec.RuntimeClassName = &name
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, n.client, ns, "with-class", "Running", podRunning)
		rs, _ := ifw.NewCRIClient(t)
		list, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)},
		}})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("sandboxes of the pod: %v, %v", list, err)
		}
		st, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: list.Items[0].Id})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.GetStatus().GetRuntimeHandler(); got != testHandler {
			t.Errorf("sandbox runtime handler %q, want %q", got, testHandler)
		}
		if got := list.Items[0].GetRuntimeHandler(); got != testHandler {
			t.Errorf("listed sandbox runtime handler %q, want %q", got, testHandler)
		}
	})

	t.Run("unknown handler", func(t *testing.T) {
		name, handler := uniq+"-nohandler", uniq+"-handler"
		runtimeClass(t, n, name, handler)
		pod := podOn(n.NodeName, "unknown-handler")
		pod.Spec.RuntimeClassName = &name
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Upstream's e2e looks for the handler's name in the event; the
		// runtime's words follow "Failed to create pod sandbox: ".
		e := waitPodEvent(t, n, ns, "unknown-handler", "FailedCreatePodSandBox", handler)
		if !strings.HasPrefix(e.Message, "Failed to create pod sandbox: ") || e.Type != v1.EventTypeWarning {
			t.Errorf("event %s %q", e.Type, e.Message)
		}
		stillPending(t, n, ns, "unknown-handler")
	})

	t.Run("deleted class", func(t *testing.T) {
		// The API server refuses a pod naming an unknown class
		// (RuntimeClass admission), so the class goes away while the pod
		// waits unscheduled, and the test then binds it to the node.
		name := uniq + "-gone"
		runtimeClass(t, n, name, testHandler)
		pod := podOn("", "deleted-class")
		pod.Spec.RuntimeClassName = &name
		pod.Spec.SchedulerName = "no-such-scheduler"
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := n.client.NodeV1().RuntimeClasses().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "RuntimeClass gone", func() (bool, error) {
			_, err := n.client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "deleted-class"}, Target: v1.ObjectReference{Kind: "Node", Name: n.NodeName}}
		if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e := waitPodEvent(t, n, ns, "deleted-class", "FailedCreatePodSandBox", "not found")
		if want := fmt.Sprintf(`Failed to create pod sandbox: runtimeclass.node.k8s.io %q not found`, name); e.Message != want {
			t.Errorf("event %q, want upstream's %q", e.Message, want)
		}
		stillPending(t, n, ns, "deleted-class")
	})
}
