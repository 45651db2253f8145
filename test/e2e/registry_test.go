//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

func TestPrivateRegistryImagePullSecret(t *testing.T) {
	registry, authorized := ifw.PrivateRegistry(t, "e2e", "pa55w0rd")
	image := registry + "/pulltest:1"
	_, is := ifw.NewCRIClient(t)
	ifw.RemoveImageIfPresent(t, is, image)

	n := joinNode(t)
	n.Start()
	ns := namespace(t, n.client)
	ctx := ctxT(t)

	// Without credentials the pull fails.
	anon := podOn(n.NodeName, "anonymous")
	anon.Spec.Containers[0].Image, anon.Spec.Containers[0].ImagePullPolicy = image, v1.PullAlways
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, anon, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "anonymous", "failing to pull", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && strings.Contains(w.Message, "401")
	})

	// With an imagePullSecret it runs.
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{registry: map[string]string{"username": "e2e", "password": "pa55w0rd"}}})
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: cfg}}
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	priv := podOn(n.NodeName, "private")
	priv.Spec.Containers[0].Image, priv.Spec.Containers[0].ImagePullPolicy = image, v1.PullAlways
	priv.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, priv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n.client, ns, "private", "running", podRunning)
	if authorized.Load() == 0 {
		t.Fatal("the registry saw no authorized request")
	}
	st, err := is.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil || st.Image == nil {
		t.Fatalf("image %s not on the node after the pull: %v", image, err)
	}
}
