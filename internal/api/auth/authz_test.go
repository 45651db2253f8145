package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

func TestRequestAttributes(t *testing.T) {
	cases := []struct {
		name     string
		method   string
		path     string
		wantVerb string
		wantSubs []string
	}{
		{name: "stats summary", method: "GET", path: "/stats/summary", wantVerb: "get", wantSubs: []string{"stats"}},
		{name: "stats root", method: "GET", path: "/stats", wantVerb: "get", wantSubs: []string{"stats"}},
		{name: "metrics", method: "GET", path: "/metrics", wantVerb: "get", wantSubs: []string{"metrics"}},
		{name: "metrics cadvisor", method: "GET", path: "/metrics/cadvisor", wantVerb: "get", wantSubs: []string{"metrics"}},
		{name: "metrics probes", method: "GET", path: "/metrics/probes", wantVerb: "get", wantSubs: []string{"metrics"}},
		{name: "metrics prefix is not metrics", method: "GET", path: "/metricsz", wantVerb: "get", wantSubs: []string{"proxy"}},
		{name: "logs dir", method: "GET", path: "/logs/", wantVerb: "get", wantSubs: []string{"log"}},
		{name: "logs file", method: "GET", path: "/logs/syslog", wantVerb: "get", wantSubs: []string{"log"}},
		{name: "checkpoint", method: "POST", path: "/checkpoint/ns/pod/c", wantVerb: "create", wantSubs: []string{"checkpoint"}},
		{name: "pods", method: "GET", path: "/pods", wantVerb: "get", wantSubs: []string{"pods", "proxy"}},
		{name: "pods slash", method: "GET", path: "/pods/", wantVerb: "get", wantSubs: []string{"pods", "proxy"}},
		{name: "runningpods", method: "GET", path: "/runningpods/", wantVerb: "get", wantSubs: []string{"pods", "proxy"}},
		{name: "runningpods no slash", method: "GET", path: "/runningpods", wantVerb: "get", wantSubs: []string{"pods", "proxy"}},
		{name: "runningPods is case sensitive", method: "GET", path: "/runningPods/", wantVerb: "get", wantSubs: []string{"proxy"}},
		{name: "healthz", method: "GET", path: "/healthz", wantVerb: "get", wantSubs: []string{"healthz", "proxy"}},
		{name: "healthz check", method: "GET", path: "/healthz/syncloop", wantVerb: "get", wantSubs: []string{"healthz", "proxy"}},
		{name: "configz", method: "GET", path: "/configz", wantVerb: "get", wantSubs: []string{"configz", "proxy"}},
		{name: "statusz has no proxy fallback", method: "GET", path: "/statusz", wantVerb: "get", wantSubs: []string{"statusz"}},
		{name: "flagz is configz without fallback", method: "GET", path: "/flagz", wantVerb: "get", wantSubs: []string{"configz"}},
		{name: "spec is proxy", method: "GET", path: "/spec/", wantVerb: "get", wantSubs: []string{"proxy"}},
		{name: "exec over websocket is get", method: "GET", path: "/exec/ns/pod/c", wantVerb: "get", wantSubs: []string{"proxy"}},
		{name: "exec over spdy is create", method: "POST", path: "/exec/ns/pod/c", wantVerb: "create", wantSubs: []string{"proxy"}},
		{name: "put", method: "PUT", path: "/x", wantVerb: "update", wantSubs: []string{"proxy"}},
		{name: "patch", method: "PATCH", path: "/x", wantVerb: "patch", wantSubs: []string{"proxy"}},
		{name: "delete", method: "DELETE", path: "/x", wantVerb: "delete", wantSubs: []string{"proxy"}},
		{name: "head has no verb as upstream", method: "HEAD", path: "/pods", wantVerb: "", wantSubs: []string{"pods", "proxy"}},
		{name: "options has no verb", method: "OPTIONS", path: "/", wantVerb: "", wantSubs: []string{"proxy"}},
	}
	u := &User{Name: "alice"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			attrs := RequestAttributes(u, testNode, httptest.NewRequest(tc.method, tc.path, nil))
			var subs []string
			for _, a := range attrs {
				subs = append(subs, a.Subresource)
				want := Attributes{User: u, Verb: tc.wantVerb, APIVersion: "v1", Resource: "nodes", Subresource: a.Subresource, Name: testNode, Path: tc.path}
				if !reflect.DeepEqual(a, want) {
					t.Errorf("attributes = %+v, want %+v", a, want)
				}
			}
			if !slices.Equal(subs, tc.wantSubs) {
				t.Errorf("subresources = %v, want %v", subs, tc.wantSubs)
			}
		})
	}
}

// allowSubresources answers reviews allowing only the given subresources.
func allowSubresources(allowed ...string) func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	return func(s authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: slices.Contains(allowed, s.ResourceAttributes.Subresource)}, nil
	}
}

func webhookAuthz() kubeletconfigv1beta1.KubeletAuthorization {
	return kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook}
}

func anonymousOnly() kubeletconfigv1beta1.KubeletAuthentication {
	return kubeletconfigv1beta1.KubeletAuthentication{
		Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
		Webhook:   kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
	}
}

func TestAuthorization(t *testing.T) {
	cases := []struct {
		name      string
		mode      kubeletconfigv1beta1.KubeletAuthorizationMode
		method    string
		path      string
		sar       func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error)
		wantCode  int
		wantBody  string
		wantSARs  []string
		wantAllow bool
	}{
		{name: "always allow makes no review", mode: kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow,
			method: "POST", path: "/exec/ns/p/c", wantCode: 200, wantBody: "ok"},
		{name: "proxy allowed", method: "GET", path: "/exec/ns/p/c", sar: allowSubresources("proxy"),
			wantCode: 200, wantBody: "ok", wantSARs: []string{"proxy"}},
		{name: "fine-grained pods allowed first", method: "GET", path: "/pods", sar: allowSubresources("pods"),
			wantCode: 200, wantBody: "ok", wantSARs: []string{"pods"}},
		{name: "pods falls back to proxy", method: "GET", path: "/pods", sar: allowSubresources("proxy"),
			wantCode: 200, wantBody: "ok", wantSARs: []string{"pods", "proxy"}},
		{name: "healthz allowed", method: "GET", path: "/healthz", sar: allowSubresources("healthz"),
			wantCode: 200, wantBody: "ok", wantSARs: []string{"healthz"}},
		{name: "configz falls back to proxy", method: "GET", path: "/configz", sar: allowSubresources("proxy"),
			wantCode: 200, wantBody: "ok", wantSARs: []string{"configz", "proxy"}},
		{name: "pods denied lists both subresources", method: "GET", path: "/pods", sar: allowSubresources(),
			wantCode: 403, wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])\n", wantSARs: []string{"pods", "proxy"}},
		{name: "stats denied has no fallback", method: "GET", path: "/stats/summary", sar: allowSubresources("proxy"),
			wantCode: 403, wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[stats])\n", wantSARs: []string{"stats"}},
		{name: "exec create denied", method: "POST", path: "/exec/ns/p/c", sar: allowSubresources(),
			wantCode: 403, wantBody: "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[proxy])\n", wantSARs: []string{"proxy"}},
		{name: "explicit deny still falls back to proxy", method: "GET", path: "/healthz",
			sar: func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
				return authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"}, nil
			},
			wantCode: 403, wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n", wantSARs: []string{"healthz", "proxy"}},
		{name: "review failure is a 500 naming the subresource", method: "GET", path: "/pods",
			sar: func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
				return authorizationv1.SubjectAccessReviewStatus{}, apierrors.NewForbidden(schema.GroupResource{Resource: "subjectaccessreviews"}, "", errors.New("no"))
			},
			wantCode: 500, wantBody: "Authorization error (user=system:anonymous, verb=get, resource=nodes, subresource=pods)", wantSARs: []string{"pods"}},
		{name: "allowed and denied at once is a 500", method: "GET", path: "/exec/ns/p/c",
			sar: func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
				return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}, nil
			},
			wantCode: 500, wantBody: "Authorization error (user=system:anonymous, verb=get, resource=nodes, subresource=proxy)", wantSARs: []string{"proxy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(nil, tc.sar)
			authz := webhookAuthz()
			if tc.mode != "" {
				authz.Mode = tc.mode
			}
			f, err := newFilter(Config{Authentication: anonymousOnly(), Authorization: authz, Client: kubeclienttest.Wrap(api), NodeName: testNode, Clock: newFakeClock()}, noBackoff)
			if err != nil {
				t.Fatal(err)
			}
			rec, _ := serve(f, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
			if got := api.subresourcesReviewed(); !slices.Equal(got, tc.wantSARs) {
				t.Errorf("reviewed %v, want %v", got, tc.wantSARs)
			}
		})
	}
}

func TestSubjectAccessReviewSpec(t *testing.T) {
	api := newFakeAPI(nil, allowSubresources("proxy"))
	f, err := newFilter(Config{Authentication: anonymousOnly(), Authorization: webhookAuthz(), Client: kubeclienttest.Wrap(api), NodeName: testNode, Clock: newFakeClock()}, noBackoff)
	if err != nil {
		t.Fatal(err)
	}
	// An authorizer sees the user exactly as authenticated.
	sar := f.authz.(*sarAuthorizer)
	u := &User{Name: "alice", UID: "42", Groups: []string{"devs", AllAuthenticated}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	attrs := RequestAttributes(u, testNode, httptest.NewRequest("DELETE", "/containerLogs/ns/p/c", nil))
	if d, _, err := sar.authorize(t.Context(), attrs[0]); err != nil || d != decisionAllow {
		t.Fatalf("authorize = %v, %v", d, err)
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "42", Groups: []string{"devs", AllAuthenticated},
		Extra: map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "delete", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: testNode,
		},
	}
	if len(api.reviews) != 1 || !reflect.DeepEqual(api.reviews[0], want) {
		t.Fatalf("reviews = %+v, want [%+v]", api.reviews, want)
	}
}

func TestAuthorizationCache(t *testing.T) {
	type step struct {
		advance   time.Duration
		user      string
		wantCode  int
		wantCalls int
	}
	cases := []struct {
		name    string
		webhook kubeletconfigv1beta1.KubeletWebhookAuthorization
		allow   bool
		steps   []step
	}{
		{name: "allowed cached for the default 5m", allow: true, steps: []step{
			{wantCode: 200, wantCalls: 1},
			{advance: 4*time.Minute + 59*time.Second, wantCode: 200, wantCalls: 1},
			{advance: time.Second, wantCode: 200, wantCalls: 2},
		}},
		{name: "denied cached for the default 30s", allow: false, steps: []step{
			{wantCode: 403, wantCalls: 1},
			{advance: 29 * time.Second, wantCode: 403, wantCalls: 1},
			{advance: time.Second, wantCode: 403, wantCalls: 2},
		}},
		{name: "configured allowed ttl", allow: true,
			webhook: kubeletconfigv1beta1.KubeletWebhookAuthorization{CacheAuthorizedTTL: metav1.Duration{Duration: 10 * time.Second}},
			steps: []step{
				{wantCode: 200, wantCalls: 1},
				{advance: 10 * time.Second, wantCode: 200, wantCalls: 2},
			}},
		{name: "configured denied ttl", allow: false,
			webhook: kubeletconfigv1beta1.KubeletWebhookAuthorization{CacheUnauthorizedTTL: metav1.Duration{Duration: 2 * time.Minute}},
			steps: []step{
				{wantCode: 403, wantCalls: 1},
				{advance: time.Minute, wantCode: 403, wantCalls: 1},
				{advance: time.Minute, wantCode: 403, wantCalls: 2},
			}},
		{name: "another user is another entry", allow: true, steps: []step{
			{wantCode: 200, wantCalls: 1},
			{user: "bob", wantCode: 200, wantCalls: 2},
			{user: "bob", wantCode: 200, wantCalls: 2},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			api := newFakeAPI(nil, func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
				return authorizationv1.SubjectAccessReviewStatus{Allowed: tc.allow}, nil
			})
			authz := webhookAuthz()
			authz.Webhook = tc.webhook
			f, err := newFilter(Config{Authentication: anonymousOnly(), Authorization: authz, Client: kubeclienttest.Wrap(api), NodeName: testNode, Clock: clk}, noBackoff)
			if err != nil {
				t.Fatal(err)
			}
			sar := f.authz.(*sarAuthorizer)
			for i, s := range tc.steps {
				clk.Step(s.advance)
				name := s.user
				if name == "" {
					name = "alice"
				}
				attrs := RequestAttributes(&User{Name: name}, testNode, httptest.NewRequest("GET", "/exec/ns/p/c", nil))
				d, _, err := sar.authorize(t.Context(), attrs[0])
				code := map[decision]int{decisionAllow: 200, decisionNoOpinion: 403}[d]
				if err != nil || code != s.wantCode || len(api.reviews) != s.wantCalls {
					t.Fatalf("step %d: decision %v err %v, %d reviews; want code %d with %d reviews", i, d, err, len(api.reviews), s.wantCode, s.wantCalls)
				}
			}
		})
	}
}

func TestWebhookRetry(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd hiccup"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "subjectaccessreviews"}, "", errors.New("no"))
	cases := []struct {
		name      string
		failures  []error
		wantCode  int
		wantCalls int
	}{
		{name: "transient failure retried", failures: []error{internal}, wantCode: 200, wantCalls: 2},
		{name: "persistent failure gives up after the steps", failures: []error{internal, internal, internal, internal}, wantCode: 500, wantCalls: 3},
		{name: "throttled retried", failures: []error{apierrors.NewTooManyRequests("slow down", 1)}, wantCode: 200, wantCalls: 2},
		{name: "permanent failure not retried", failures: []error{forbidden}, wantCode: 500, wantCalls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			api := newFakeAPI(nil, func(authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
				calls++
				if calls <= len(tc.failures) {
					return authorizationv1.SubjectAccessReviewStatus{}, tc.failures[calls-1]
				}
				return authorizationv1.SubjectAccessReviewStatus{Allowed: true}, nil
			})
			f, err := newFilter(Config{Authentication: anonymousOnly(), Authorization: webhookAuthz(), Client: kubeclienttest.Wrap(api), NodeName: testNode, Clock: newFakeClock()}, noBackoff)
			if err != nil {
				t.Fatal(err)
			}
			rec, _ := serve(f, httptest.NewRequest(http.MethodGet, "/exec/ns/p/c", nil))
			if rec.Code != tc.wantCode || calls != tc.wantCalls {
				t.Fatalf("got %d after %d calls, want %d after %d", rec.Code, calls, tc.wantCode, tc.wantCalls)
			}
		})
	}
}
