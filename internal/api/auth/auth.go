package auth

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// Defaults of KubeletConfiguration v1beta1, applied to unset fields.
const (
	defaultTokenCacheTTL        = 2 * time.Minute
	defaultCacheAuthorizedTTL   = 5 * time.Minute
	defaultCacheUnauthorizedTTL = 30 * time.Second
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Well-known identities and groups.
const (
	AnonymousUser      = "system:anonymous"
	AllUnauthenticated = "system:unauthenticated"
	AllAuthenticated   = "system:authenticated"
	// CredentialIDKey is the Extra key naming the credential that
	// authenticated the user (an x509 certificate's SHA-256 fingerprint).
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// Config configures a Filter. Unset fields of Authentication and
// Authorization take the KubeletConfiguration v1beta1 defaults (webhook
// authentication on with a 2m cache, anonymous off, Webhook authorization
// caching 5m/30s), as upstream's defaulting does.
type Config struct {
	Authentication kubeletconfigv1beta1.KubeletAuthentication
	Authorization  kubeletconfigv1beta1.KubeletAuthorization
	// Client makes TokenReviews and SubjectAccessReviews; nil in standalone
	// mode, where enabling either webhook is an error.
	Client kubeclient.Interface
	// NodeName is the name in every authorization check.
	NodeName string
	// Clock defaults to the real clock.
	Clock clock.Clock
}

// Filter authenticates and authorizes requests to the kubelet API.
type Filter struct {
	authn    requestAuthenticator
	authz    authorizer
	nodeName string
	clientCA *caBundle
}

// New builds a Filter. It fails when a webhook is enabled without a client,
// the authorization mode is unknown, the client CA file cannot be loaded,
// or no authentication method is left.
func New(cfg Config) (*Filter, error) {
	return newFilter(cfg, defaultRetryBackoff())
}

func newFilter(cfg Config, retry retryBackoff) (*Filter, error) {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	client := cfg.Client
	if client != nil && reflect.ValueOf(client).Kind() == reflect.Pointer && reflect.ValueOf(client).IsNil() {
		client = nil
	}
	f := &Filter{nodeName: cfg.NodeName}
	authn, ca, err := newAuthenticator(cfg.Authentication, client, clk, retry)
	if err != nil {
		return nil, err
	}
	f.authn, f.clientCA = authn, ca
	if f.authz, err = newAuthorizer(cfg.Authorization, client, clk, retry); err != nil {
		return nil, err
	}
	return f, nil
}

// ClientCAs returns the pool loaded from authentication.x509.clientCAFile,
// or nil when none is set. Upstream serves with tls.RequestClientCert and
// leaves verification to the filter, which answers a bad certificate with
// 401; tls.VerifyClientCertIfGiven rejects it in the handshake instead.
func (f *Filter) ClientCAs() *x509.CertPool {
	if f.clientCA == nil {
		return nil
	}
	return f.clientCA.pool()
}

// Wrap guards next: 401 when the request cannot be authenticated, 500 when
// authorization fails, 403 when every candidate subresource is denied.
// Bodies and statuses are upstream's.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := f.authn.authenticate(r)
		if err != nil {
			klog.ErrorS(err, "Unable to authenticate the request due to an error")
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		if !ok {
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := RequestAttributes(u, f.nodeName, r)
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.Subresource)
			d, _, err := f.authz.authorize(r.Context(), a)
			if err != nil {
				klog.ErrorS(err, "Authorization error", "user", u.Name, "verb", a.Verb, "resource", a.Resource, "subresource", a.Subresource)
				writeError(w, http.StatusInternalServerError, fmt.Sprintf(
					"Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)", u.Name, a.Verb, a.Resource, a.Subresource))
				return
			}
			if d == decisionAllow {
				next.ServeHTTP(w, r.WithContext(withUser(r.Context(), u)))
				return
			}
		}
		// The candidates differ only in subresource.
		a := attrs[0]
		klog.V(2).InfoS("Forbidden", "user", u.Name, "verb", a.Verb, "resource", a.Resource, "subresource(s)", subresources)
		writeError(w, http.StatusForbidden, fmt.Sprintf(
			"Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n", u.Name, a.Verb, a.Resource, subresources))
	})
}

// writeError answers like go-restful's WriteErrorString: the status and the
// bare message, sniffed as text/plain.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

type userKey struct{}

func withUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user Wrap authenticated for the request's context.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}
