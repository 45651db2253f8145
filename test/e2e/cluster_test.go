//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

const busybox = ifw.BusyboxImage

// node is one of our kubelets joined to the test cluster.
type node struct {
	*ifw.Kubelet
	client kubernetes.Interface // admin
}

// joinNode starts our kubelet against the control plane with node
// credentials; it leaves the cluster (Node deleted) when the test ends.
func joinNode(t testing.TB, extraConfig ...string) *node {
	t.Helper()
	return joinNodeNamed(t, ifw.UniqueName("node"), extraConfig...)
}

// joinNodeNamed is joinNode for a node called nodeName.
func joinNodeNamed(t testing.TB, nodeName string, extraConfig ...string) *node {
	t.Helper()
	cp := framework.ControlPlane(t)
	return &node{Kubelet: cp.JoinNode(t, nodeName, extraConfig...), client: cp.Client}
}

// webhookAuth is a cluster node's kubelet API authentication: x509 client
// certificates from caFile (the API server's) and webhook TokenReview, no
// anonymous requests, webhook authorization.
func webhookAuth(caFile string) string {
	return fmt.Sprintf(`authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook`, caFile)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	ifw.Eventually(t, timeout, 100*time.Millisecond, what, cond)
}

func nodeReady(n *v1.Node) bool { return framework.NodeReady(n) }

// namespace creates a fresh namespace, deleted when the test ends.
func namespace(t testing.TB, c kubernetes.Interface) string {
	t.Helper()
	return namespaceNamed(t, c, ifw.UniqueName("e2e"))
}

// namespaceNamed is namespace for a namespace called ns.
func namespaceNamed(t testing.TB, c kubernetes.Interface, ns string) string {
	t.Helper()
	return framework.ControlPlane(t).Namespace(t, ns)
}

func podOn(nodeName, name string, command ...string) *v1.Pod {
	if len(command) == 0 {
		command = []string{"sleep", "3600"}
	}
	grace := int64(2)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "main", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent, Command: command}},
		},
	}
}

func waitPod(t testing.TB, c kubernetes.Interface, ns, name, what string, cond func(p *v1.Pod) bool) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	eventually(t, 90*time.Second, fmt.Sprintf("pod %s/%s %s", ns, name, what), func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		if !cond(p) {
			return false, fmt.Errorf("phase %s reason %q conditions %v statuses %v", p.Status.Phase, p.Status.Reason, p.Status.Conditions, p.Status.ContainerStatuses)
		}
		return true, nil
	})
	return got
}

func podRunning(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func TestNodeRegistersReadyWithLease(t *testing.T) {
	n := joinNode(t, "nodeStatusUpdateFrequency: 2s", "systemReserved:\n  cpu: 100m\n  memory: 100Mi")
	n.ExtraArgs = append(n.ExtraArgs, "--node-labels", "example.com/role=e2e")
	start := time.Now()
	n.Start()
	ctx := ctxT(t)
	var nd *v1.Node
	eventually(t, 10*time.Second, "node Ready", func() (bool, error) {
		var err error
		nd, err = n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(nd), err
	})
	t.Logf("node Ready %v after kubelet start", time.Since(start).Round(time.Millisecond))
	for k, want := range map[string]string{"kubernetes.io/hostname": n.NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "example.com/role": "e2e"} {
		if nd.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, nd.Labels[k], want)
		}
	}
	var internal string
	for _, a := range nd.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			internal = a.Address
		}
	}
	if internal != "127.0.0.1" {
		t.Errorf("InternalIP %q, want 127.0.0.1 (--node-ip)", internal)
	}
	info := nd.Status.NodeInfo
	if info.KubeletVersion != "v1.36.3" || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") || info.BootID == "" || info.MachineID == "" || info.KernelVersion == "" {
		t.Errorf("nodeInfo %+v", info)
	}
	capCPU, allocCPU := nd.Status.Capacity[v1.ResourceCPU], nd.Status.Allocatable[v1.ResourceCPU]
	if capCPU.MilliValue()-allocCPU.MilliValue() != 100 {
		t.Errorf("cpu capacity %s allocatable %s: want systemReserved 100m subtracted", capCPU.String(), allocCPU.String())
	}
	if pods := nd.Status.Capacity[v1.ResourcePods]; pods.Value() != 110 {
		t.Errorf("pods capacity %s, want maxPods 110", pods.String())
	}
	if nd.Status.DaemonEndpoints.KubeletEndpoint.Port != int32(n.Port) {
		t.Errorf("daemonEndpoints %+v", nd.Status.DaemonEndpoints)
	}
	var lease *coordinationv1.Lease
	eventually(t, 20*time.Second, "node lease owned by the Node", func() (bool, error) {
		var err error
		lease, err = n.client.CoordinationV1().Leases("kube-node-lease").Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil && len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == nd.UID, err
	})
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != n.NodeName {
		t.Errorf("lease holder %v", lease.Spec.HolderIdentity)
	}

	// The kubelet's events reach the API. (NodeReady is only recorded when
	// Ready flips, as upstream; a node Ready at registration has none.)
	eventually(t, 20*time.Second, "node events Starting and NodeHasSufficientMemory from the kubelet", func() (bool, error) {
		evs, err := n.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + n.NodeName})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			if e.Source.Component == "kubelet" {
				seen[e.Reason] = true
			}
		}
		return seen["Starting"] && seen["NodeHasSufficientMemory"], fmt.Errorf("reasons seen %v", seen)
	})

	// A deleted Node object is registered again.
	if err := n.client.CoreV1().Nodes().Delete(ctx, n.NodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "node registered again", func() (bool, error) {
		again, err := n.client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		return err == nil && again.UID != nd.UID && nodeReady(again), err
	})
}

func TestDeploymentRunsAndPodDeletion(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	replicas := int32(10)
	labels := map[string]string{"app": "e2e-web"}
	grace := int64(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					NodeSelector:                  map[string]string{"kubernetes.io/hostname": n.NodeName},
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []v1.Container{{Name: "web", Image: busybox, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"httpd", "-f", "-p", "8080"}}},
				},
			},
		},
	}
	start := time.Now()
	if _, err := n.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "10 ready replicas", func() (bool, error) {
		got, err := n.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.ReadyReplicas == replicas, err
	})
	t.Logf("10 replicas ready %v after the Deployment was created", time.Since(start).Round(time.Millisecond))
	pods, err := n.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != n.NodeName || p.Status.PodIP == "" || !strings.HasPrefix(p.Status.PodIP, ifw.PodSubnetPrefix) {
			t.Fatalf("pod %s on %q with IP %q", p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
	}

	// kubectl delete returns within the grace period plus 2 s: the kubelet
	// stops the containers and completes the deletion.
	victim := pods.Items[0].Name
	start = time.Now()
	framework.Kubectl(t, "-n", ns, "delete", "pod", victim, "--wait=true", "--timeout=60s")
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("kubectl delete pod took %v; want at most grace (2s) + 2s", took)
	}
	eventually(t, 10*time.Second, "deleted pod's containers removed from the runtime", func() (bool, error) {
		return len(ifw.PodContainers(t, string(pods.Items[0].UID))) == 0, nil
	})
	// Pod events come from the kubelet with upstream's reasons.
	other := pods.Items[1].Name
	eventually(t, 20*time.Second, "pod events Pulled, Created, Started", func() (bool, error) {
		evs, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + other})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			if e.Source.Component == "kubelet" && e.Source.Host == n.NodeName {
				seen[e.Reason] = true
			}
		}
		return seen["Pulled"] && seen["Created"] && seen["Started"], fmt.Errorf("reasons seen %v", seen)
	})
}

func TestAdmissionRejectsPodOverAllocatable(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	p := podOn(n.NodeName, "too-big")
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000")}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "too-big", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if got.Status.Reason != "OutOfcpu" || !strings.Contains(got.Status.Message, "Node didn't have enough resource: cpu") {
		t.Fatalf("status reason %q message %q", got.Status.Reason, got.Status.Message)
	}
	if cs := ifw.PodContainers(t, string(got.UID)); len(cs) != 0 {
		t.Fatal("a rejected pod was started")
	}
}

func TestEnvFromConfigMapAndSecret(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	if _, err := n.client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"color": "blue", "size": "L"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := podOn(n.NodeName, "env", "sh", "-c", "echo COLOR=$COLOR PASSWORD=$PASSWORD CFG_size=$CFG_size MISSING=$MISSING; sleep 3600")
	optional := true
	p.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "color"}}},
		{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
		{Name: "MISSING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "x", Optional: &optional}}},
	}
	p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, n.client, ns, "env", "running", podRunning)
	logPath := fmt.Sprintf("/var/log/pods/%s_env_%s/main/0.log", ns, got.UID)
	eventually(t, 10*time.Second, "env values in the container log", func() (bool, error) {
		data, err := readFile(logPath)
		return strings.Contains(data, "COLOR=blue PASSWORD=s3cret CFG_size=L MISSING="), err
	})

	// A missing non-optional key keeps the container waiting with CreateContainerConfigError.
	bad := podOn(n.NodeName, "bad-env")
	bad.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "absent"}}}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "bad-env", "CreateContainerConfigError", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
}

func TestStaticPodMirror(t *testing.T) {
	n := joinNode(t)
	n.WriteManifest("static.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: `+busybox+`
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`)
	n.Start()
	ctx := ctxT(t)
	name := n.StaticPodName("static-web")
	mp := waitPod(t, n.client, "default", name, "mirror pod Running", podRunning)
	if _, ok := mp.Annotations["kubernetes.io/config.mirror"]; !ok {
		t.Fatalf("mirror pod without kubernetes.io/config.mirror: %v", mp.Annotations)
	}
	if len(mp.OwnerReferences) != 1 || mp.OwnerReferences[0].Kind != "Node" || mp.OwnerReferences[0].Name != n.NodeName {
		t.Fatalf("mirror pod owner references %v", mp.OwnerReferences)
	}
	containerID := mp.Status.ContainerStatuses[0].ContainerID
	// Deleting the mirror pod recreates it; the static pod keeps running.
	if err := n.client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := waitPod(t, n.client, "default", name, "recreated", func(p *v1.Pod) bool { return p.UID != mp.UID && podRunning(p) })
	if id := again.Status.ContainerStatuses[0].ContainerID; id != containerID {
		t.Fatalf("container %s replaced by %s: deleting a mirror pod must not restart the static pod", containerID, id)
	}
	// Removing the manifest removes the mirror pod.
	n.RemoveManifest("static.yaml")
	eventually(t, 30*time.Second, "mirror pod gone", func() (bool, error) {
		_, err := n.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func readFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

// TestRepeatedEventIsCounted: a crash-looping container's identical BackOff
// events become one Event whose count the kubelet patches (upstream's
// correlator), not one object per occurrence; the pod status the kubelet
// patches shows CrashLoopBackOff.
func TestRepeatedEventIsCounted(t *testing.T) {
	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, podOn(n.NodeName, "crasher", "sh", "-c", "exit 3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var backoff v1.Event
	eventually(t, 2*time.Minute, "one BackOff event with count >= 2", func() (bool, error) {
		evs, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=crasher,reason=BackOff"})
		if err != nil {
			return false, err
		}
		var counts []int32
		for _, e := range evs.Items {
			counts = append(counts, e.Count)
			if e.Source.Component == "kubelet" && e.Count >= 2 {
				backoff = e
			}
		}
		if len(evs.Items) > 1 {
			t.Fatalf("identical BackOff events stored as %d objects (counts %v)", len(evs.Items), counts)
		}
		return backoff.Count >= 2, fmt.Errorf("BackOff events' counts %v", counts)
	})
	if !strings.HasPrefix(backoff.Name, "crasher.") || backoff.LastTimestamp.Before(&backoff.FirstTimestamp) ||
		backoff.Message != fmt.Sprintf("Back-off restarting failed container main in pod crasher_%s(%s)", ns, backoff.InvolvedObject.UID) ||
		backoff.Type != v1.EventTypeWarning || backoff.Source.Host != n.NodeName || backoff.ReportingController != "kubelet" || backoff.ReportingInstance != n.NodeName {
		t.Errorf("BackOff event %+v", backoff)
	}
	waitPod(t, n.client, ns, "crasher", "in CrashLoopBackOff", func(p *v1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" && c.RestartCount >= 1 && c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.ExitCode == 3 {
				return true
			}
		}
		return false
	})
}
