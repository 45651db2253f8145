//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// podEvents lists the events of one pod with the given reason.
func podEvents(t *testing.T, n *node, ns, pod, reason string) []v1.Event {
	t.Helper()
	list, err := n.client.CoreV1().Events(ns).List(ctxT(t), metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.name", pod), fields.OneTermEqualSelector("reason", reason)).String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// A pod whose configMap or secret (or key) is missing waits in
// ContainerCreating with FailedMount events and starts once they exist.
func TestVolumeSourcesCreatedLate(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		StringData: map[string]string{"other": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := podOn(n.NodeName, "late", "sh", "-c", "cat /cfg/color /sec/pw; echo; sleep 3600")
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}}
	p.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", Items: []v1.KeyToPath{{Key: "pw", Path: "pw"}}}}},
	}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "late", "waiting in ContainerCreating", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodPending && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
	})
	eventually(t, 30*time.Second, "FailedMount events for both volumes", func() (bool, error) {
		var cm, sec bool
		var seen []string
		for _, e := range podEvents(t, n, ns, "late", "FailedMount") {
			seen = append(seen, e.Message)
			cm = cm || (e.Type == v1.EventTypeWarning && e.Message == `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`)
			sec = sec || strings.HasPrefix(e.Message, `MountVolume.SetUp failed for volume "sec" : `) && strings.Contains(e.Message, "pw")
		}
		return cm && sec, fmt.Errorf("events %q", seen)
	})

	if _, err := n.client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec, err := n.client.CoreV1().Secrets(ns).Get(ctx, "sec", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.StringData = map[string]string{"pw": "s3cret"}
	if _, err := n.client.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "late", "running once the sources exist", podRunning)
	logPath := fmt.Sprintf("/var/log/pods/%s_late_%s/main/0.log", ns, got.UID)
	eventually(t, 10*time.Second, "volume contents in the container log", func() (bool, error) {
		data, err := readFile(logPath)
		return strings.Contains(data, "blues3cret"), err
	})
}

// A pod asking for a sysctl outside the safe set and allowedUnsafeSysctls
// is rejected: Failed with SysctlForbidden.
func TestSysctlForbidden(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	p := podOn(n.NodeName, "sysctl")
	p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "9000"}}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "sysctl", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if got.Status.Reason != "SysctlForbidden" || got.Status.Message != `forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Fatalf("status reason %q message %q", got.Status.Reason, got.Status.Message)
	}
}
