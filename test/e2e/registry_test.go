//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// privateRegistry serves the loopback registry behind basic auth on
// 127.0.0.1:5001 (containerd knows localhost:5001 as plain HTTP).
func privateRegistry(t *testing.T, user, pass string) *atomic.Int64 {
	t.Helper()
	target, _ := url.Parse("http://127.0.0.1:5000")
	proxy := httputil.NewSingleHostReverseProxy(target)
	var authorized atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:5001")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1:5001 for the private registry: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &authorized
}

func TestPrivateRegistryImagePullSecret(t *testing.T) {
	authorized := privateRegistry(t, "e2e", "pa55w0rd")
	image := "localhost:5001/pulltest:1"
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
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{"localhost:5001": map[string]string{"username": "e2e", "password": "pa55w0rd"}}})
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
