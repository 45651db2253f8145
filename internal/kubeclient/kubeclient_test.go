package kubeclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// seen is one request as the API server received it.
type seen struct {
	method, path, query, contentType, accept, userAgent string
	protobufBody                                        bool
}

// apiServer answers every request with a JSON object of the kind the test
// names for the request's path, and records what it received.
type apiServer struct {
	mu   sync.Mutex
	reqs []seen
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.reqs = append(a.reqs, seen{
		method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
		contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept"), userAgent: r.Header.Get("User-Agent"),
		protobufBody: bytes.HasPrefix(body, []byte("k8s\x00")),
	})
	a.mu.Unlock()
	apiVersion, kind := "v1", ""
	switch p := r.URL.Path; {
	case r.Method == http.MethodDelete:
		kind = "Status"
	case strings.Contains(p, "/serviceaccounts/"):
		apiVersion, kind = "authentication.k8s.io/v1", "TokenRequest"
	case strings.HasSuffix(p, "/tokenreviews"):
		apiVersion, kind = "authentication.k8s.io/v1", "TokenReview"
	case strings.HasSuffix(p, "/subjectaccessreviews"):
		apiVersion, kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	case strings.HasSuffix(p, "/certificatesigningrequests") && r.URL.Query().Get("watch") == "true":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"ADDED","object":{"kind":"CertificateSigningRequest","apiVersion":"certificates.k8s.io/v1","metadata":{"name":"answer"}}}`+"\n")
		return
	case strings.HasSuffix(p, "/certificatesigningrequests") && r.Method == http.MethodGet:
		apiVersion, kind = "certificates.k8s.io/v1", "CertificateSigningRequestList"
	case strings.Contains(p, "/certificatesigningrequests"):
		apiVersion, kind = "certificates.k8s.io/v1", "CertificateSigningRequest"
	case strings.Contains(p, "/runtimeclasses"):
		apiVersion, kind = "node.k8s.io/v1", "RuntimeClass"
	case strings.Contains(p, "/leases"):
		apiVersion, kind = "coordination.k8s.io/v1", "Lease"
	case strings.Contains(p, "/csidrivers"):
		apiVersion, kind = "storage.k8s.io/v1", "CSIDriver"
	case strings.Contains(p, "/csinodes"):
		apiVersion, kind = "storage.k8s.io/v1", "CSINode"
	case strings.Contains(p, "/volumeattachments"):
		apiVersion, kind = "storage.k8s.io/v1", "VolumeAttachment"
	case strings.Contains(p, "/persistentvolumeclaims"):
		kind = "PersistentVolumeClaim"
	case strings.Contains(p, "/persistentvolumes"):
		kind = "PersistentVolume"
	case strings.HasSuffix(p, "/services"):
		kind = "ServiceList"
	case strings.Contains(p, "/pods"):
		kind = "Pod"
	case strings.Contains(p, "/nodes"):
		kind = "Node"
	case strings.Contains(p, "/events"):
		kind = "Event"
	case strings.Contains(p, "/configmaps"):
		kind = "ConfigMap"
	case strings.Contains(p, "/secrets"):
		kind = "Secret"
	case strings.Contains(p, "/services/"):
		kind = "Service"
	}
	w.Header().Set("Content-Type", "application/json")
	if kind == "Status" {
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		return
	}
	fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"name":"answer"}}`, kind, apiVersion)
}

func (a *apiServer) last() seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs[len(a.reqs)-1]
}

func newTestClient(t *testing.T, mutate func(*rest.Config)) (*Client, *apiServer) {
	t.Helper()
	api := &apiServer{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, UserAgent: "kubelet/test"}
	if mutate != nil {
		mutate(cfg)
	}
	c, err := NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, api
}

const protobuf = "application/vnd.kubernetes.protobuf"

func TestRequestsMatchTheGeneratedClientset(t *testing.T) {
	c, api := newTestClient(t, nil)
	ctx := context.Background()
	ten := int64(10)
	cases := []struct {
		name                string
		call                func() (string, error) // returns the decoded object's name
		method, path, query string
		body                bool // a protobuf request body is expected
	}{
		{name: "get pod", call: func() (string, error) {
			p, err := c.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{ResourceVersion: "0"})
			return p.Name, err
		}, method: "GET", path: "/api/v1/namespaces/ns/pods/p", query: "resourceVersion=0"},
		{name: "create pod", call: func() (string, error) {
			p, err := c.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
			return p.Name, err
		}, method: "POST", path: "/api/v1/namespaces/ns/pods", body: true},
		{name: "delete pod", call: func() (string, error) {
			return "answer", c.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{})
		}, method: "DELETE", path: "/api/v1/namespaces/ns/pods/p", body: true},
		{name: "patch pod status", call: func() (string, error) {
			p, err := c.CoreV1().Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}, "status")
			return p.Name, err
		}, method: "PATCH", path: "/api/v1/namespaces/ns/pods/p/status"},
		{name: "get node", call: func() (string, error) {
			n, err := c.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
			return n.Name, err
		}, method: "GET", path: "/api/v1/nodes/n"},
		{name: "create node", call: func() (string, error) {
			n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
			return n.Name, err
		}, method: "POST", path: "/api/v1/nodes", body: true},
		{name: "get configmap", call: func() (string, error) {
			o, err := c.CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/api/v1/namespaces/ns/configmaps/cm"},
		{name: "get secret", call: func() (string, error) {
			o, err := c.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/api/v1/namespaces/ns/secrets/s"},
		{name: "list services", call: func() (string, error) {
			_, err := c.CoreV1().Services("ns").List(ctx, metav1.ListOptions{TimeoutSeconds: &ten})
			return "answer", err
		}, method: "GET", path: "/api/v1/namespaces/ns/services", query: "timeout=10s&timeoutSeconds=10"},
		{name: "create token", call: func() (string, error) {
			o, err := c.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return o.Name, err
		}, method: "POST", path: "/api/v1/namespaces/ns/serviceaccounts/sa/token", body: true},
		{name: "update lease", call: func() (string, error) {
			o, err := c.CoordinationV1().Leases("kube-node-lease").Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.UpdateOptions{})
			return o.Name, err
		}, method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", body: true},
		{name: "token review", call: func() (string, error) {
			o, err := c.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
			return o.Name, err
		}, method: "POST", path: "/apis/authentication.k8s.io/v1/tokenreviews", body: true},
		{name: "subject access review", call: func() (string, error) {
			o, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{})
			return o.Name, err
		}, method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", body: true},
		{name: "create csr", call: func() (string, error) {
			o, err := c.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{}, metav1.CreateOptions{})
			return o.Name, err
		}, method: "POST", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", body: true},
		{name: "get csr", call: func() (string, error) {
			o, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr-1", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1"},
		{name: "list csr by name", call: func() (string, error) {
			_, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=csr-1"})
			return "answer", err
		}, method: "GET", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", query: "fieldSelector=metadata.name%3Dcsr-1"},
		{name: "get claim", call: func() (string, error) {
			o, err := c.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "c", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/api/v1/namespaces/ns/persistentvolumeclaims/c"},
		{name: "get volume", call: func() (string, error) {
			o, err := c.CoreV1().PersistentVolumes().Get(ctx, "pv", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/api/v1/persistentvolumes/pv"},
		{name: "get csi driver", call: func() (string, error) {
			o, err := c.StorageV1().CSIDrivers().Get(ctx, "d", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/apis/storage.k8s.io/v1/csidrivers/d"},
		{name: "create csi node", call: func() (string, error) {
			o, err := c.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
			return o.Name, err
		}, method: "POST", path: "/apis/storage.k8s.io/v1/csinodes", body: true},
		{name: "update csi node", call: func() (string, error) {
			o, err := c.StorageV1().CSINodes().Update(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.UpdateOptions{})
			return o.Name, err
		}, method: "PUT", path: "/apis/storage.k8s.io/v1/csinodes/n", body: true},
		{name: "get volume attachment", call: func() (string, error) {
			o, err := c.StorageV1().VolumeAttachments().Get(ctx, "csi-1", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/apis/storage.k8s.io/v1/volumeattachments/csi-1"},
		{name: "get runtime class", call: func() (string, error) {
			o, err := c.NodeV1().RuntimeClasses().Get(ctx, "rc", metav1.GetOptions{})
			return o.Name, err
		}, method: "GET", path: "/apis/node.k8s.io/v1/runtimeclasses/rc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if name != "answer" {
				t.Errorf("decoded name %q, want the server's answer", name)
			}
			got := api.last()
			if got.method != tc.method || got.path != tc.path || got.query != tc.query {
				t.Errorf("request %s %s?%s, want %s %s?%s", got.method, got.path, got.query, tc.method, tc.path, tc.query)
			}
			if got.userAgent != "kubelet/test" {
				t.Errorf("User-Agent %q", got.userAgent)
			}
			if !strings.HasPrefix(got.accept, protobuf) {
				t.Errorf("Accept %q, want protobuf first as client-go's built-in clients", got.accept)
			}
			if tc.body && (got.contentType != protobuf || !got.protobufBody) {
				t.Errorf("body Content-Type %q protobuf=%v, want protobuf", got.contentType, got.protobufBody)
			}
		})
	}
}

func TestWatchCertificateSigningRequests(t *testing.T) {
	c, api := newTestClient(t, nil)
	w, err := c.CertificatesV1().CertificateSigningRequests().Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=csr-1", ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
	if ev.Type != watch.Added || !ok || csr.Name != "answer" {
		t.Fatalf("event %v %#v, want ADDED of the server's CSR", ev.Type, ev.Object)
	}
	got := api.last()
	if got.method != "GET" || got.path != "/apis/certificates.k8s.io/v1/certificatesigningrequests" ||
		got.query != "fieldSelector=metadata.name%3Dcsr-1&resourceVersion=7&watch=true" {
		t.Errorf("watch request %s %s?%s", got.method, got.path, got.query)
	}
}

func TestConfiguredContentTypeWins(t *testing.T) {
	c, api := newTestClient(t, func(cfg *rest.Config) {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	})
	if _, err := c.CoordinationV1().Leases("l").Create(context.Background(), &coordinationv1.Lease{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := api.last(); got.contentType != "application/json" || got.protobufBody || got.accept != "application/json" {
		t.Errorf("got Content-Type %q Accept %q protobuf=%v, want JSON", got.contentType, got.accept, got.protobufBody)
	}
}

func TestEventSinkUsesEachEventsNamespace(t *testing.T) {
	c, api := newTestClient(t, nil)
	sink := EventSink{Core: c.CoreV1()}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "team-a"}}
	if _, err := sink.Create(ev); err != nil {
		t.Fatal(err)
	}
	if got := api.last(); got.method != "POST" || got.path != "/api/v1/namespaces/team-a/events" {
		t.Errorf("create went to %s %s", got.method, got.path)
	}
	if _, err := sink.Patch(ev, []byte(`{"count":2}`)); err != nil {
		t.Fatal(err)
	}
	if got := api.last(); got.method != "PATCH" || got.path != "/api/v1/namespaces/team-a/events/e" || got.contentType != string(types.StrategicMergePatchType) {
		t.Errorf("patch went to %s %s as %q", got.method, got.path, got.contentType)
	}
}

func TestQPSNeedsBurst(t *testing.T) {
	if _, err := NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", QPS: 5}); err == nil {
		t.Fatal("QPS without burst accepted")
	}
	c, err := NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", QPS: 5, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	// One token bucket for all groups, as the generated clientset shares it.
	core := c.core.(*rest.RESTClient).GetRateLimiter()
	if core == nil || core != c.coordination.(*rest.RESTClient).GetRateLimiter() || core != c.authorization.(*rest.RESTClient).GetRateLimiter() ||
		core != c.storage.(*rest.RESTClient).GetRateLimiter() ||
		core != c.node.(*rest.RESTClient).GetRateLimiter() {
		t.Errorf("groups do not share one rate limiter")
	}
}
