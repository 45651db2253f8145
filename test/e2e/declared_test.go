//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// initResizePatch is a pods/resize strategic merge patch of one init
// container's CPU.
func initResizePatch(container, cpuReq, cpuLim string) string {
	return fmt.Sprintf(`{"spec":{"initContainers":[{"name":%q,"resources":{"requests":{"cpu":%q},"limits":{"cpu":%q}}}]}}`,
		container, cpuReq, cpuLim)
}

func initContainerStatusOf(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// waitDeclared waits until the Node declares exactly want.
func waitDeclared(t *testing.T, n *node, want []string) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("node %s declares %v", n.NodeName, want), func() (bool, error) {
		node, err := n.client.CoreV1().Nodes().Get(context.Background(), n.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !slices.Equal(node.Status.DeclaredFeatures, want) {
			return false, fmt.Errorf("declaredFeatures %v", node.Status.DeclaredFeatures)
		}
		return true, nil
	})
}

// Node declared features (KEP-5328) through the real API server: the Node
// declares what upstream v1.36 declares by default less what our kubelet
// does not honour; the API server then accepts an in-place resize of a
// running non-sidecar init container, and our kubelet applies it to the
// container's cgroup; a pod bound here needing an undeclared feature fails
// admission with upstream's reason. Restarted with InPlacePodVerticalScalingInitContainers
// off, the kubelet stops declaring it and the API server refuses that
// resize, naming the feature.
func TestNodeDeclaredFeatures(t *testing.T) {
	n := joinNode(t, "podLogsDir: "+t.TempDir())
	n.Start()
	waitDeclared(t, n, []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"})
	if !logContains(t, n.Kubelet, "Not declaring a node feature this kubelet does not honour", `feature="ExtendWebSocketsToKubelet"`) ||
		!logContains(t, n.Kubelet, "Not declaring a node feature this kubelet does not honour", `feature="RestartAllContainersOnContainerExits"`) {
		t.Error("the withheld features are not logged by name")
	}

	ns := namespace(t, n.client)
	ctx := ctxT(t)
	p := podOn(n.NodeName, "initresize")
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sleep", "3600"}, Resources: resources("100m", "32Mi", "200m", "64Mi")}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, n.client, ns, "initresize", "init container running", func(p *v1.Pod) bool {
		cs := initContainerStatusOf(p, "init")
		return cs != nil && cs.State.Running != nil && cs.ContainerID != ""
	})
	initID := initContainerStatusOf(p, "init").ContainerID
	cg := cgroupOf(n, p, initID)
	if q := cgroupValue(t, "cpu", cg, "cpu.cfs_quota_us"); q != "20000" {
		t.Fatalf("init container cpu.cfs_quota_us %s before the resize, want 20000", q)
	}

	// Declared: the API server takes the resize and the kubelet applies it
	// in place.
	kubectl(t, "-n", ns, "patch", "pod", "initresize", "--subresource", "resize", "--type", "strategic", "-p", initResizePatch("init", "100m", "300m"))
	eventually(t, 30*time.Second, "init container cpu.cfs_quota_us 30000", func() (bool, error) {
		if q := cgroupValue(t, "cpu", cg, "cpu.cfs_quota_us"); q != "30000" {
			return false, fmt.Errorf("cpu.cfs_quota_us %s", q)
		}
		return true, nil
	})
	p, err := n.client.CoreV1().Pods(ns).Get(ctx, "initresize", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := initContainerStatusOf(p, "init"); cs.ContainerID != initID || cs.RestartCount != 0 {
		t.Errorf("the init container was restarted for its resize: %+v", cs)
	}

	// A pod bound here that needs an undeclared feature (a
	// RestartAllContainers rule) fails admission as on upstream's kubelet.
	ra := podOn(n.NodeName, "restartall")
	ra.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
	ra.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, ra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ra = waitPod(t, n.client, ns, "restartall", "failed admission", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if want := "Pod requires node features that are not available: RestartAllContainersOnContainerExits"; ra.Status.Reason != "PodFeatureUnsupported" || ra.Status.Message != want {
		t.Errorf("pod status %q %q, want PodFeatureUnsupported %q", ra.Status.Reason, ra.Status.Message, want)
	}

	// Not declared: the API server refuses, naming the feature.
	n.Stop()
	n.ExtraArgs = append(n.ExtraArgs, "--feature-gates=InPlacePodVerticalScalingInitContainers=false")
	n.Start()
	waitDeclared(t, n, []string{"InPlacePodLevelResourcesVerticalScaling"})
	_, err = n.client.CoreV1().Pods(ns).Patch(ctx, "initresize", types.StrategicMergePatchType,
		[]byte(initResizePatch("init", "100m", "400m")), metav1.PatchOptions{}, "resize")
	if err == nil || !strings.Contains(err.Error(), "InPlacePodVerticalScalingInitContainers") {
		t.Errorf("resize of an init container on a node not declaring InPlacePodVerticalScalingInitContainers: %v", err)
	}
	if q := cgroupValue(t, "cpu", cg, "cpu.cfs_quota_us"); q != "30000" {
		t.Errorf("init container cpu.cfs_quota_us %s after the refused resize, want 30000", q)
	}
}
