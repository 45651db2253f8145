//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// jwtClaims are the claims of a Kubernetes service account token we check.
type jwtClaims struct {
	Aud []string `json:"aud"`
	Exp int64    `json:"exp"`
	Iat int64    `json:"iat"`
	Sub string   `json:"sub"`
	K8s struct {
		Namespace string `json:"namespace"`
		Pod       struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// decodeJWT returns the (unverified) payload of token; TokenReview checks
// the signature.
func decodeJWT(t *testing.T, token string) jwtClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT: %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decode JWT payload: %v", err)
	}
	var c jwtClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("JWT payload %s: %v", raw, err)
	}
	return c
}

// A pod created through the API gets the kube-api-access volume the
// ServiceAccount admission adds: a token bound to the pod, the cluster CA
// (the kube-root-ca.crt config map) and the namespace; a projection of its
// own gets a token for its audience and lifetime.
func TestServiceAccountTokenProjection(t *testing.T) {
	n := joinNodeNamed(t, ifw.UniqueName("satoken"))
	n.Start()
	ns := namespaceNamed(t, n.client, ifw.UniqueName("satoken"))
	ctx := ctxT(t)
	eventually(t, 60*time.Second, "kube-root-ca.crt in "+ns, func() (bool, error) {
		_, err := n.client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, err
	})

	const audience = "satoken.example.com"
	exp := int64(600)
	p := podOn(n.NodeName, "sa")
	p.Spec.Volumes = []v1.Volume{{Name: "vault", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: audience, ExpirationSeconds: &exp, Path: "vault-token"}},
	}}}}}
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}})
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "vault", MountPath: "/var/run/secrets/tokens"}, {Name: "creds", MountPath: "/etc/creds"}}
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	created, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var apiAccess string
	for _, v := range created.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			apiAccess = v.Name
		}
	}
	if apiAccess == "" {
		t.Fatalf("the API server added no kube-api-access volume: %+v", created.Spec.Volumes)
	}
	got := waitPod(t, n.client, ns, "sa", "running", podRunning)
	t.Logf("pod with two token projections Ready %v after creation", time.Since(start).Round(time.Millisecond))

	cat := func(path string) string {
		t.Helper()
		return kubectl(t, "-n", ns, "exec", "sa", "--", "cat", path)
	}
	const saDir = "/var/run/secrets/kubernetes.io/serviceaccount/"

	// The default token: the API server's audience, bound to this pod.
	token := cat(saDir + "token")
	claims := decodeJWT(t, token)
	if claims.Sub != "system:serviceaccount:"+ns+":default" || claims.K8s.Namespace != ns ||
		claims.K8s.Pod.Name != "sa" || claims.K8s.Pod.UID != string(got.UID) || claims.K8s.ServiceAccount.Name != "default" {
		t.Fatalf("default token claims %+v, want bound to pod %s/sa (%s)", claims, ns, got.UID)
	}
	if claims.Exp <= claims.Iat {
		t.Fatalf("default token exp %d iat %d", claims.Exp, claims.Iat)
	}
	review, err := n.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:"+ns+":default" {
		t.Fatalf("TokenReview of the default token: %+v", review.Status)
	}
	if uids := review.Status.User.Extra["authentication.kubernetes.io/pod-uid"]; len(uids) != 1 || uids[0] != string(got.UID) {
		t.Fatalf("TokenReview pod-uid %v, want %s", uids, got.UID)
	}

	// ca.crt is the cluster CA; namespace is the pod's.
	wantCA, err := os.ReadFile(framework.CACert)
	if err != nil {
		t.Fatal(err)
	}
	if ca := cat(saDir + "ca.crt"); !bytes.Equal(bytes.TrimSpace([]byte(ca)), bytes.TrimSpace(wantCA)) {
		t.Fatalf("ca.crt in the pod differs from %s:\n%s", framework.CACert, ca)
	}
	if got := cat(saDir + "namespace"); got != ns {
		t.Fatalf("namespace file %q, want %q", got, ns)
	}

	// The custom projection: its audience and a 10-minute lifetime.
	vault := cat("/var/run/secrets/tokens/vault-token")
	vc := decodeJWT(t, vault)
	if len(vc.Aud) != 1 || vc.Aud[0] != audience || vc.Exp-vc.Iat != exp || vc.K8s.Pod.UID != string(got.UID) {
		t.Fatalf("custom token claims %+v, want audience %q, exp-iat %d, pod %s", vc, audience, exp, got.UID)
	}
	review, err = n.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: vault, Audiences: []string{audience}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !review.Status.Authenticated || len(review.Status.Audiences) != 1 || review.Status.Audiences[0] != audience {
		t.Fatalf("TokenReview of the custom token for %q: %+v", audience, review.Status)
	}
	// Tokens live on a tmpfs, never on the node's disk (issue 14): in the
	// container and on the node, where the volume directories are tmpfs
	// mounts that go with the pod.
	mounts := kubectl(t, "-n", ns, "exec", "sa", "--", "cat", "/proc/mounts")
	for _, dir := range []string{"/var/run/secrets/kubernetes.io/serviceaccount", "/var/run/secrets/tokens"} {
		if !strings.Contains(mounts, "tmpfs "+dir+" tmpfs ") {
			t.Errorf("%s is not a tmpfs in the container:\n%s", dir, mounts)
		}
	}
	if !strings.Contains(mounts, "tmpfs /etc/creds tmpfs ") {
		t.Errorf("the secret volume is not a tmpfs in the container:\n%s", mounts)
	}
	podDir := filepath.Join(n.RootDir, "pods", string(got.UID))
	for _, vol := range []string{"kubernetes.io~projected/" + apiAccess, "kubernetes.io~projected/vault", "kubernetes.io~secret/creds"} {
		dir := filepath.Join(podDir, "volumes", vol)
		ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dir))
		if err != nil || len(ms) != 1 || ms[0].FSType != "tmpfs" {
			t.Errorf("volume %s on the node: mounts %v (err %v), want one tmpfs", vol, ms, err)
		}
	}
	if err := n.client.CoreV1().Pods(ns).Delete(ctx, "sa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the token tmpfs unmounted and the pod directory removed", func() (bool, error) {
		ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(podDir))
		if err != nil || len(ms) > 0 {
			return false, fmt.Errorf("mounts %v (err %v)", ms, err)
		}
		_, err = os.Lstat(podDir)
		return os.IsNotExist(err), err
	})

	// The kubelet no longer warns that it ignores token projections.
	evs, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=sa"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		// The Node authorizer learns of the pod's binding from its own
		// watch: a TokenRequest made the moment the kubelet sees the pod can
		// come before it ("no relationship found between node"), and the
		// retry succeeds. Upstream's kubelet records the same transient
		// FailedMount; any other FailedMount is a failure.
		transient := e.Reason == "FailedMount" && strings.Contains(e.Message, "no relationship found between node")
		if e.Reason == "UnsupportedField" || (e.Reason == "FailedMount" && !transient) {
			t.Errorf("event %s: %s", e.Reason, e.Message)
		}
	}
}

// A readiness gate keeps Ready False until another controller sets its
// condition True on the pod's status in the API; the kubelet then flips
// Ready, and its own status writes keep that condition.
func TestReadinessGateFlipsReady(t *testing.T) {
	n := joinNodeNamed(t, ifw.UniqueName("satoken"))
	n.Start()
	ns := namespaceNamed(t, n.client, ifw.UniqueName("satoken"))
	ctx := ctxT(t)
	const gate = "satoken.example.com/lb-ready"
	p := podOn(n.NodeName, "gated")
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
	if _, err := n.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	condOf := func(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == typ {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	waitPod(t, n.client, ns, "gated", "containers ready, Ready False for the gate", func(p *v1.Pod) bool {
		cr, r := condOf(p, v1.ContainersReady), condOf(p, v1.PodReady)
		return cr != nil && cr.Status == v1.ConditionTrue && r != nil && r.Status == v1.ConditionFalse && r.Reason == "ReadinessGatesNotReady" &&
			strings.Contains(r.Message, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gate))
	})

	patch := func(status string) {
		t.Helper()
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, gate, status)
		kubectl(t, "-n", ns, "patch", "pod", "gated", "--subresource=status", "--type=strategic", "-p", body)
	}
	start := time.Now()
	patch("True")
	waitPod(t, n.client, ns, "gated", "Ready True after the gate was set", func(p *v1.Pod) bool {
		r, g := condOf(p, v1.PodReady), condOf(p, gate)
		return r != nil && r.Status == v1.ConditionTrue && g != nil && g.Status == v1.ConditionTrue
	})
	t.Logf("Ready True %v after the gate condition was patched", time.Since(start).Round(time.Millisecond))

	patch("False")
	got := waitPod(t, n.client, ns, "gated", "Ready False after the gate was cleared", func(p *v1.Pod) bool {
		r := condOf(p, v1.PodReady)
		return r != nil && r.Status == v1.ConditionFalse && r.Reason == "ReadinessGatesNotReady"
	})
	if r := condOf(got, v1.PodReady); !strings.Contains(r.Message, fmt.Sprintf(`the status of pod readiness gate %q is not "True", but False`, gate)) {
		t.Fatalf("Ready message %q", r.Message)
	}
	// The kubelet's status writes never drop the foreign condition.
	if g := condOf(got, gate); g == nil || g.Status != v1.ConditionFalse {
		t.Fatalf("gate condition %+v after the kubelet's updates", g)
	}
}
