package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
	"github.com/seed-kubelet/kubelet/internal/kubeclient/kubeclienttest"
)

func alwaysAllowAuthz() kubeletconfigv1beta1.KubeletAuthorization {
	return kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca", nil)
	goodCA := writeFile(t, dir, "ca.crt", pemOf(ca.cert))
	noCerts := writeFile(t, dir, "empty.crt", []byte("not a certificate\n"))
	api := newFakeAPI(nil, nil)
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
		wantCAs bool
	}{
		{name: "defaults need a client for the token webhook", cfg: Config{}, wantErr: "no client provided, cannot use webhook authentication"},
		{name: "typed nil client is no client", cfg: Config{Client: (*kubeclient.Client)(nil)}, wantErr: "no client provided, cannot use webhook authentication"},
		{name: "webhook authorization needs a client",
			cfg:     Config{Authentication: anonymousOnly(), Authorization: webhookAuthz()},
			wantErr: "no client provided, cannot use webhook authorization"},
		{name: "unset mode defaults to webhook",
			cfg:     Config{Authentication: anonymousOnly()},
			wantErr: "no client provided, cannot use webhook authorization"},
		{name: "unknown mode",
			cfg:     Config{Authentication: anonymousOnly(), Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: "RBAC"}},
			wantErr: "unknown authorization mode RBAC"},
		{name: "no authentication method",
			cfg: Config{Authorization: alwaysAllowAuthz(), Authentication: kubeletconfigv1beta1.KubeletAuthentication{
				Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)}}},
			wantErr: "no authentication method configured"},
		{name: "missing client CA file",
			cfg: Config{Authorization: alwaysAllowAuthz(), Authentication: kubeletconfigv1beta1.KubeletAuthentication{
				X509: kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: filepath.Join(dir, "nope.crt")}}, Client: kubeclienttest.Wrap(api)},
			wantErr: "unable to load client CA file"},
		{name: "client CA file without certificates",
			cfg: Config{Authorization: alwaysAllowAuthz(), Authentication: kubeletconfigv1beta1.KubeletAuthentication{
				X509: kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: noCerts}}, Client: kubeclienttest.Wrap(api)},
			wantErr: "no certificates found"},
		{name: "standalone anonymous always allow", cfg: Config{Authentication: anonymousOnly(), Authorization: alwaysAllowAuthz()}},
		{name: "webhooks with a client", cfg: Config{Client: kubeclienttest.Wrap(api)}},
		{name: "x509 only",
			cfg: Config{Authorization: alwaysAllowAuthz(), Authentication: kubeletconfigv1beta1.KubeletAuthentication{
				X509:    kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: goodCA},
				Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)}}},
			wantCAs: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New() = %v", err)
			}
			if got := f.ClientCAs() != nil; got != tc.wantCAs {
				t.Fatalf("ClientCAs() set = %v, want %v", got, tc.wantCAs)
			}
		})
	}
}

// tokenStatuses answers TokenReviews from a table; unknown tokens fail.
func tokenStatuses(table map[string]authenticationv1.TokenReviewStatus) func(string) (authenticationv1.TokenReviewStatus, error) {
	return func(token string) (authenticationv1.TokenReviewStatus, error) {
		st, ok := table[token]
		if !ok {
			return authenticationv1.TokenReviewStatus{}, errors.New("connection refused")
		}
		return st, nil
	}
}

var reviewedTokens = map[string]authenticationv1.TokenReviewStatus{
	"good": {Authenticated: true, User: authenticationv1.UserInfo{
		Username: "system:serviceaccount:ns:sa", UID: "sa-uid", Groups: []string{"system:serviceaccounts"},
		Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}}}},
	"authenticated-group": {Authenticated: true, User: authenticationv1.UserInfo{Username: "carol", Groups: []string{AllAuthenticated}}},
	"bad":                 {Authenticated: false},
	"expired":             {Authenticated: false, Error: "token expired"},
}

func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	root := newTestCA(t, "client-ca", nil)
	other := newTestCA(t, "other-ca", nil)
	inter := newTestCA(t, "intermediate", root)
	caFile := writeFile(t, dir, "ca.crt", pemOf(root.cert))

	alice, _ := root.issue(t, leafOpts{cn: "alice", orgs: []string{"devs", "ops"}, uids: []string{"alice-uid"}})
	viaInter, _ := inter.issue(t, leafOpts{cn: "bob"})
	untrusted, _ := other.issue(t, leafOpts{cn: "mallory"})
	expired, _ := root.issue(t, leafOpts{cn: "old", notBefore: testNow.Add(-48 * time.Hour), notAfter: testNow.Add(-time.Hour)})
	serverOnly, _ := root.issue(t, leafOpts{cn: "server", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	noCN, _ := root.issue(t, leafOpts{orgs: []string{"devs"}})
	twoUIDs, _ := root.issue(t, leafOpts{cn: "twins", uids: []string{"a", "b"}})

	saUser := &User{Name: "system:serviceaccount:ns:sa", UID: "sa-uid", Groups: []string{"system:serviceaccounts", AllAuthenticated},
		Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"p"}}}
	anon := &User{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}
	wsToken := func(tok string) string {
		return bearerProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(tok))
	}
	websocket := func(protocols string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Connection", "keep-alive, Upgrade")
			r.Header.Set("Upgrade", "websocket")
			r.Header.Set("Sec-WebSocket-Protocol", protocols)
		}
	}
	bearer := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", v) }
	}
	certs := func(cs ...*x509.Certificate) func(*http.Request) {
		return func(r *http.Request) { withPeerCerts(r, cs...) }
	}

	cases := []struct {
		name        string
		anonymous   bool
		setup       []func(*http.Request)
		wantCode    int
		wantUser    *User
		wantHeaders map[string]string
	}{
		{name: "anonymous enabled without credentials", anonymous: true, wantCode: 200, wantUser: anon},
		{name: "anonymous disabled without credentials", wantCode: 401},
		{name: "client certificate", setup: []func(*http.Request){certs(alice)}, wantCode: 200, wantUser: &User{
			// DER sorts the O attributes; groups keep the certificate's order.
			Name: "alice", UID: "alice-uid", Groups: append(slices.Clone(alice.Subject.Organization), AllAuthenticated),
			Extra: map[string][]string{CredentialIDKey: {credentialID(alice.Raw)}}}},
		{name: "client certificate through an intermediate", setup: []func(*http.Request){certs(viaInter, inter.cert)}, wantCode: 200, wantUser: &User{
			Name: "bob", Groups: []string{AllAuthenticated}, Extra: map[string][]string{CredentialIDKey: {credentialID(viaInter.Raw)}}}},
		{name: "untrusted certificate is rejected despite anonymous", anonymous: true, setup: []func(*http.Request){certs(untrusted)}, wantCode: 401},
		{name: "expired certificate", setup: []func(*http.Request){certs(expired)}, wantCode: 401},
		{name: "certificate not for client auth", setup: []func(*http.Request){certs(serverOnly)}, wantCode: 401},
		{name: "certificate without common name falls to anonymous", anonymous: true, setup: []func(*http.Request){certs(noCN)}, wantCode: 200, wantUser: anon},
		{name: "certificate with two UIDs", setup: []func(*http.Request){certs(twoUIDs)}, wantCode: 401},
		{name: "bearer token", setup: []func(*http.Request){bearer("Bearer good")}, wantCode: 200, wantUser: saUser,
			wantHeaders: map[string]string{"Authorization": ""}},
		{name: "bearer scheme is case insensitive", setup: []func(*http.Request){bearer("bearer good")}, wantCode: 200, wantUser: saUser},
		{name: "rejected token is not anonymous", anonymous: true, setup: []func(*http.Request){bearer("Bearer bad")}, wantCode: 401},
		{name: "token review error", anonymous: true, setup: []func(*http.Request){bearer("Bearer expired")}, wantCode: 401},
		{name: "token review unreachable", setup: []func(*http.Request){bearer("Bearer unknown")}, wantCode: 401},
		{name: "user already authenticated keeps its groups", setup: []func(*http.Request){bearer("Bearer authenticated-group")}, wantCode: 200,
			wantUser: &User{Name: "carol", Groups: []string{AllAuthenticated}}},
		{name: "basic auth is ignored", anonymous: true, setup: []func(*http.Request){bearer("Basic Zm9vOmJhcg==")}, wantCode: 200, wantUser: anon,
			wantHeaders: map[string]string{"Authorization": "Basic Zm9vOmJhcg=="}},
		{name: "empty bearer token is no credential", anonymous: true, setup: []func(*http.Request){bearer("Bearer  good")}, wantCode: 200, wantUser: anon},
		{name: "bad certificate with good token", setup: []func(*http.Request){certs(untrusted), bearer("Bearer good")}, wantCode: 200, wantUser: saUser},
		{name: "certificate wins over token", setup: []func(*http.Request){certs(viaInter, inter.cert), bearer("Bearer good")}, wantCode: 200,
			wantUser:    &User{Name: "bob", Groups: []string{AllAuthenticated}, Extra: map[string][]string{CredentialIDKey: {credentialID(viaInter.Raw)}}},
			wantHeaders: map[string]string{"Authorization": "Bearer good"}},
		{name: "websocket protocol token", setup: []func(*http.Request){websocket("v5.channel.k8s.io, " + wsToken("good"))}, wantCode: 200, wantUser: saUser,
			wantHeaders: map[string]string{"Sec-Websocket-Protocol": "v5.channel.k8s.io"}},
		{name: "websocket token needs another subprotocol", anonymous: true, setup: []func(*http.Request){websocket(wsToken("good"))}, wantCode: 401},
		{name: "websocket token badly encoded", anonymous: true, setup: []func(*http.Request){websocket("v5.channel.k8s.io," + bearerProtocolPrefix + "!!")}, wantCode: 401},
		{name: "websocket rejected token", anonymous: true, setup: []func(*http.Request){websocket("v5.channel.k8s.io," + wsToken("bad"))}, wantCode: 401},
		{name: "protocol token ignored without upgrade", anonymous: true, setup: []func(*http.Request){func(r *http.Request) {
			r.Header.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io,"+wsToken("good"))
		}}, wantCode: 200, wantUser: anon},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(tokenStatuses(reviewedTokens), nil)
			f, err := newFilter(Config{
				Authentication: kubeletconfigv1beta1.KubeletAuthentication{
					X509:      kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: caFile},
					Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(tc.anonymous)},
				},
				Authorization: alwaysAllowAuthz(), Client: kubeclienttest.Wrap(api), NodeName: testNode, Clock: newFakeClock(),
			}, noBackoff)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("GET", "/pods", nil)
			for _, s := range tc.setup {
				s(req)
			}
			rec, got := serve(f, req)
			if rec.Code != tc.wantCode {
				t.Fatalf("code = %d %q, want %d", rec.Code, rec.Body.String(), tc.wantCode)
			}
			if tc.wantCode == 401 {
				if body, ct := rec.Body.String(), rec.Header().Get("Content-Type"); body != "Unauthorized" || ct != "text/plain; charset=utf-8" {
					t.Fatalf("401 body %q type %q, want %q text/plain", body, ct, "Unauthorized")
				}
				return
			}
			if !reflect.DeepEqual(got.user, tc.wantUser) {
				t.Fatalf("user = %+v, want %+v", got.user, tc.wantUser)
			}
			for k, v := range tc.wantHeaders {
				if g := got.headers.Get(k); g != v {
					t.Errorf("handler saw %s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

func TestTokenCache(t *testing.T) {
	type step struct {
		advance   time.Duration
		token     string
		wantCode  int
		wantCalls int
	}
	cases := []struct {
		name  string
		ttl   time.Duration
		steps []step
	}{
		{name: "accepted token cached for the default 2m", steps: []step{
			{token: "good", wantCode: 200, wantCalls: 1},
			{advance: time.Minute, token: "good", wantCode: 200, wantCalls: 1},
			{advance: 59 * time.Second, token: "good", wantCode: 200, wantCalls: 1},
			{advance: time.Second, token: "good", wantCode: 200, wantCalls: 2},
		}},
		{name: "rejected token cached too", steps: []step{
			{token: "bad", wantCode: 401, wantCalls: 1},
			{advance: time.Minute, token: "bad", wantCode: 401, wantCalls: 1},
			{advance: time.Minute, token: "bad", wantCode: 401, wantCalls: 2},
		}},
		{name: "errors are not cached", steps: []step{
			{token: "expired", wantCode: 401, wantCalls: 1},
			{token: "expired", wantCode: 401, wantCalls: 2},
			{token: "unknown", wantCode: 401, wantCalls: 3},
			{token: "unknown", wantCode: 401, wantCalls: 4},
		}},
		{name: "tokens cached apart", steps: []step{
			{token: "good", wantCode: 200, wantCalls: 1},
			{token: "bad", wantCode: 401, wantCalls: 2},
			{token: "good", wantCode: 200, wantCalls: 2},
		}},
		{name: "configured ttl", ttl: 10 * time.Second, steps: []step{
			{token: "good", wantCode: 200, wantCalls: 1},
			{advance: 9 * time.Second, token: "good", wantCode: 200, wantCalls: 1},
			{advance: time.Second, token: "good", wantCode: 200, wantCalls: 2},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			api := newFakeAPI(tokenStatuses(reviewedTokens), nil)
			f, err := newFilter(Config{
				Authentication: kubeletconfigv1beta1.KubeletAuthentication{Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{
					Enabled: ptr.To(true), CacheTTL: metav1.Duration{Duration: tc.ttl}}},
				Authorization: alwaysAllowAuthz(), Client: kubeclienttest.Wrap(api), NodeName: testNode, Clock: clk,
			}, wait1())
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				clk.Step(s.advance)
				req := httptest.NewRequest("GET", "/pods", nil)
				req.Header.Set("Authorization", "Bearer "+s.token)
				rec, _ := serve(f, req)
				if rec.Code != s.wantCode || api.tokenCalls() != s.wantCalls {
					t.Fatalf("step %d: %d after %d reviews, want %d after %d", i, rec.Code, api.tokenCalls(), s.wantCode, s.wantCalls)
				}
			}
		})
	}
}

// wait1 makes one webhook attempt, so unreachable tokens count once.
func wait1() retryBackoff { return retryBackoff{Steps: 1} }

func TestClientCAReload(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA := newTestCA(t, "old-ca", nil), newTestCA(t, "new-ca", nil)
	caFile := writeFile(t, dir, "ca.crt", pemOf(oldCA.cert))
	oldCert, _ := oldCA.issue(t, leafOpts{cn: "old-client"})
	newCert, _ := newCA.issue(t, leafOpts{cn: "new-client"})
	clk := newFakeClock()
	f, err := New(Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			X509:    kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: caFile},
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
		},
		Authorization: alwaysAllowAuthz(), NodeName: testNode, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		write    []byte
		advance  time.Duration
		cert     *x509.Certificate
		wantCode int
	}{
		{name: "old CA trusted", cert: oldCert, wantCode: 200},
		{name: "new CA not yet trusted", cert: newCert, wantCode: 401},
		{name: "rotated file not re-read within a minute", write: pemOf(newCA.cert), advance: 59 * time.Second, cert: newCert, wantCode: 401},
		{name: "rotated file picked up", advance: time.Second, cert: newCert, wantCode: 200},
		{name: "old CA dropped", cert: oldCert, wantCode: 401},
		{name: "broken file keeps the last bundle", write: []byte("garbage"), advance: time.Minute, cert: newCert, wantCode: 200},
		{name: "removed file keeps the last bundle", write: nil, advance: time.Minute, cert: newCert, wantCode: 200},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			switch {
			case s.write != nil:
				writeFile(t, dir, "ca.crt", s.write)
			case s.name == "removed file keeps the last bundle":
				if err := os.Remove(caFile); err != nil {
					t.Fatal(err)
				}
			}
			clk.Step(s.advance)
			rec, _ := serve(f, withPeerCerts(httptest.NewRequest("GET", "/pods", nil), s.cert))
			if rec.Code != s.wantCode {
				t.Fatalf("code = %d, want %d", rec.Code, s.wantCode)
			}
		})
	}
}

// TestTLSHandshake serves the filter over real TLS, configured as upstream
// does: client certificates requested, verified by the filter.
func TestTLSHandshake(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca := newTestCA(t, "client-ca", nil)
	caFile := writeFile(t, dir, "ca.crt", pemOf(ca.cert))
	good, goodKey := ca.issue(t, leafOpts{cn: "system:node:node-a", orgs: []string{"system:nodes"}, notBefore: now.Add(-time.Hour), notAfter: now.Add(time.Hour)})
	stranger := newTestCA(t, "stranger", nil)
	bad, badKey := stranger.issue(t, leafOpts{cn: "mallory", notBefore: now.Add(-time.Hour), notAfter: now.Add(time.Hour)})

	f, err := New(Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			X509:    kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: caFile},
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
		},
		Authorization: alwaysAllowAuthz(), NodeName: testNode, Clock: clock.RealClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := UserFrom(r.Context())
		_, _ = w.Write([]byte(u.Name + " " + strings.Join(u.Groups, ",")))
	})))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, ClientCAs: f.ClientCAs()}
	srv.StartTLS()
	defer srv.Close()

	cases := []struct {
		name     string
		cert     *x509.Certificate
		key      any
		wantCode int
		wantBody string
	}{
		{name: "trusted client certificate", cert: good, key: goodKey, wantCode: 200, wantBody: "system:node:node-a system:nodes,system:authenticated"},
		{name: "untrusted client certificate", cert: bad, key: badKey, wantCode: 401, wantBody: "Unauthorized"},
		{name: "no client certificate", wantCode: 401, wantBody: "Unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := srv.Client()
			tr := client.Transport.(*http.Transport).Clone()
			if tc.cert != nil {
				tr.TLSClientConfig.Certificates = []tls.Certificate{{Certificate: [][]byte{tc.cert.Raw}, PrivateKey: tc.key}}
			}
			client.Transport = tr
			resp, err := client.Get(srv.URL + "/pods")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantCode || string(body) != tc.wantBody {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}
