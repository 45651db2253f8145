//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// pluginRequests reads the requests the test plugin logged.
func pluginRequests(t *testing.T, log string) []credentialproviderv1.CredentialProviderRequest {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []credentialproviderv1.CredentialProviderRequest
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r credentialproviderv1.CredentialProviderRequest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("plugin log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// The service account token mode on a real cluster: the plugin gets a
// token for the pod's service account with its audience, bound to the pod
// (the API server's TokenReview says so), and the annotations it asked
// for; its answer is cached per service account; an account without the
// required annotation does not run it and the pod's pull secret pulls;
// a failing plugin is named in the pull error and a pull secret still
// pulls.
func TestCredentialProviderServiceAccountToken(t *testing.T) {
	registry, authorized := ifw.PrivateRegistry(t, "sa-user", "sa-pa55")
	image := registry + "/pulltest:1"
	audience := ifw.UniqueName("registry-audience")

	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ifw.BuildBinary(t, "./test/plugins/credential-provider"), filepath.Join(binDir, "sa-plugin")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "requests.log")
	cfg := filepath.Join(dir, "providers.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: sa-plugin
  matchImages: [%q]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--username", "sa-user", "--password", "sa-pa55", "--require-token", "--fail-on-annotation", "example.com/fail", "--log", %q]
  tokenAttributes:
    serviceAccountTokenAudience: %s
    requireServiceAccount: true
    cacheType: ServiceAccount
    requiredServiceAccountAnnotationKeys: ["example.com/pull"]
    optionalServiceAccountAnnotationKeys: ["example.com/fail"]
`, registry, log, audience)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, is := ifw.NewCRIClient(t)
	ifw.RemoveImageIfPresent(t, is, image)

	n := joinNode(t)
	n.ExtraArgs = append(n.ExtraArgs, "--image-credential-provider-config", cfg, "--image-credential-provider-bin-dir", binDir)
	ctx := ctxT(t)
	// Nodes may only ask for tokens of audiences their pods' volumes use,
	// unless RBAC lets them (ServiceAccountNodeAudienceRestriction), as a
	// cluster admin grants for a credential provider.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: audience}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{audience}, Verbs: []string{"request-serviceaccounts-token-audience"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: audience},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: audience},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "system:node:" + n.NodeName}}}
	if _, err := n.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.client.RbacV1().ClusterRoles().Delete(ctxT(t), audience, metav1.DeleteOptions{}) })
	if _, err := n.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.client.RbacV1().ClusterRoleBindings().Delete(ctxT(t), audience, metav1.DeleteOptions{}) })
	n.Start()
	ns := namespace(t, n.client)

	accounts := map[string]map[string]string{
		"puller": {"example.com/pull": "yes"},
		"plain":  nil,
		"flaky":  {"example.com/pull": "yes", "example.com/fail": "yes"},
	}
	for name, ann := range accounts {
		sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
		if _, err := n.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secretCfg, _ := json.Marshal(map[string]any{"auths": map[string]any{registry: map[string]string{"username": "sa-user", "password": "sa-pa55"}}})
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: secretCfg}}
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(name, sa string, withSecret bool) {
		t.Helper()
		p := podOn(n.NodeName, name)
		p.Spec.ServiceAccountName = sa
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullAlways
		if withSecret {
			p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
		}
		if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The plugin's credentials, with a token bound to the pod.
	create("first", "puller", false)
	first := waitPod(t, n.client, ns, "first", "running", podRunning)
	reqs := pluginRequests(t, log)
	if len(reqs) != 1 || reqs[0].Image != registry+"/pulltest" || reqs[0].ServiceAccountAnnotations["example.com/pull"] != "yes" || len(reqs[0].ServiceAccountAnnotations) != 1 {
		t.Fatalf("plugin requests %+v, want one for %s/pulltest with the required annotation", reqs, registry)
	}
	review, err := n.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: reqs[0].ServiceAccountToken, Audiences: []string{audience}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := review.Status
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":puller" ||
		strings.Join(st.User.Extra["authentication.kubernetes.io/pod-name"], "") != "first" ||
		strings.Join(st.User.Extra["authentication.kubernetes.io/pod-uid"], "") != string(first.UID) {
		t.Fatalf("the plugin's token reviews as %+v; want the puller account, bound to pod first (%s), for audience %s", st, first.UID, audience)
	}
	if authorized.Load() == 0 {
		t.Fatal("the registry let no request through")
	}

	// Cached per service account: another pod of it does not run the plugin.
	create("second", "puller", false)
	waitPod(t, n.client, ns, "second", "running", podRunning)
	if reqs := pluginRequests(t, log); len(reqs) != 1 {
		t.Errorf("plugin ran %d times for two pods of one service account, want 1 (cacheType ServiceAccount)", len(reqs))
	}

	// Without the required annotation the plugin is not run; the pull
	// secret pulls.
	create("plain", "plain", true)
	waitPod(t, n.client, ns, "plain", "running", podRunning)
	if reqs := pluginRequests(t, log); len(reqs) != 1 {
		t.Errorf("plugin ran for an account without the required annotation: %d requests", len(reqs))
	}

	// A failing plugin: named in the pull error; a pull secret still pulls.
	create("broken", "flaky", false)
	broken := waitPod(t, n.client, ns, "broken", "failing to pull", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff"
	})
	if msg := broken.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, `credential provider plugin "sa-plugin"`) ||
		!strings.Contains(msg, "test plugin told to fail for accounts annotated example.com/fail") {
		t.Errorf("waiting message %q does not name the failed plugin", msg)
	}
	create("rescued", "flaky", true)
	waitPod(t, n.client, ns, "rescued", "running on the pull secret", podRunning)
}
