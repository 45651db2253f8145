package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// requestAuthenticator identifies the user of a request. ok=false with a
// nil error means "no credentials for me"; an error means bad credentials.
type requestAuthenticator interface {
	authenticate(r *http.Request) (*User, bool, error)
}

// tokenAuthenticator identifies the user owning a bearer token.
type tokenAuthenticator interface {
	authenticateToken(ctx context.Context, token string) (*User, bool, error)
}

type authenticatorFunc func(r *http.Request) (*User, bool, error)

func (f authenticatorFunc) authenticate(r *http.Request) (*User, bool, error) { return f(r) }

// newAuthenticator chains, in upstream's order, x509 then bearer token then
// websocket-protocol token, adds system:authenticated to whoever they
// accept, and only then falls back to anonymous, and only when no
// credential was rejected.
func newAuthenticator(cfg kubeletconfigv1beta1.KubeletAuthentication, client kubeclient.Interface, clk clock.Clock, retry retryBackoff) (requestAuthenticator, *caBundle, error) {
	var chain []requestAuthenticator
	var ca *caBundle
	if cfg.X509.ClientCAFile != "" {
		var err error
		if ca, err = loadCABundle(cfg.X509.ClientCAFile, clk); err != nil {
			return nil, nil, err
		}
		chain = append(chain, &x509Authenticator{ca: ca, clock: clk})
	}
	if ptr.Deref(cfg.Webhook.Enabled, true) {
		if client == nil {
			return nil, nil, errors.New("no client provided, cannot use webhook authentication")
		}
		ttl := cfg.Webhook.CacheTTL.Duration
		if ttl == 0 {
			ttl = defaultTokenCacheTTL
		}
		tokens := newCachedTokenAuthenticator(&tokenReviewAuthenticator{
			client: client.AuthenticationV1().TokenReviews(), retry: retry, clock: clk,
		}, ttl, clk)
		chain = append(chain, bearerAuthenticator{tokens}, websocketAuthenticator{tokens})
	}
	anonymous := ptr.Deref(cfg.Anonymous.Enabled, false)
	if len(chain) == 0 {
		if anonymous {
			return anonymousAuthenticator(), ca, nil
		}
		return nil, nil, errNoAuthn
	}
	authn := addAuthenticatedGroup(union(chain))
	if !anonymous {
		return authn, ca, nil
	}
	return authenticatorFunc(func(r *http.Request) (*User, bool, error) {
		u, ok, err := authn.authenticate(r)
		if err != nil || ok {
			return u, ok, err
		}
		return anonymousAuthenticator().authenticate(r)
	}), ca, nil
}

// union returns the first acceptance; rejections are collected and only
// reported when nobody accepts.
func union(chain []requestAuthenticator) requestAuthenticator {
	return authenticatorFunc(func(r *http.Request) (*User, bool, error) {
		var errs []error
		for _, a := range chain {
			u, ok, err := a.authenticate(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return u, true, nil
			}
		}
		return nil, false, utilerrors.NewAggregate(errs)
	})
}

func addAuthenticatedGroup(a requestAuthenticator) requestAuthenticator {
	return authenticatorFunc(func(r *http.Request) (*User, bool, error) {
		u, ok, err := a.authenticate(r)
		if err != nil || !ok {
			return nil, ok, err
		}
		if u.Name == AnonymousUser || slices.Contains(u.Groups, AllAuthenticated) || slices.Contains(u.Groups, AllUnauthenticated) {
			return u, true, nil
		}
		cp := *u
		cp.Groups = append(slices.Clone(u.Groups), AllAuthenticated)
		return &cp, true, nil
	})
}

func anonymousAuthenticator() requestAuthenticator {
	return authenticatorFunc(func(*http.Request) (*User, bool, error) {
		return &User{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}, true, nil
	})
}

// x509Authenticator accepts a client certificate that chains to the client
// CA bundle for client auth: CN is the user, O the groups.
type x509Authenticator struct {
	ca    *caBundle
	clock clock.PassiveClock
}

func (a *x509Authenticator) authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts := a.ca.verifyOptions()
	opts.CurrentTime = a.clock.Now()
	leaf := r.TLS.PeerCertificates[0]
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certificateIdentifier(leaf), err)
	}
	var errs []error
	for _, chain := range chains {
		u, ok, err := userFromCertificate(chain[0])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	return nil, false, utilerrors.NewAggregate(errs)
}

// bearerAuthenticator reads "Authorization: Bearer <token>" and removes the
// header once the token is accepted.
type bearerAuthenticator struct{ tokens tokenAuthenticator }

var (
	errInvalidToken = errors.New("invalid bearer token")
	errNoAuthn      = errors.New("no authentication method configured")
)

func (a bearerAuthenticator) authenticate(r *http.Request) (*User, bool, error) {
	header := strings.TrimSpace(r.Header.Get("Authorization"))
	if header == "" {
		return nil, false, nil
	}
	parts := strings.SplitN(header, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return nil, false, nil
	}
	u, ok, err := a.tokens.authenticateToken(r.Context(), parts[1])
	if ok {
		r.Header.Del("Authorization")
	}
	if !ok && err == nil {
		err = errInvalidToken
	}
	return u, ok, err
}

// websocketAuthenticator reads a token carried as the websocket subprotocol
// base64url.bearer.authorization.k8s.io.<base64url token>, for browsers
// that cannot set headers, and drops that subprotocol once accepted.
type websocketAuthenticator struct{ tokens tokenAuthenticator }

const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io."

var connectionUpgrade = regexp.MustCompile(`(^|.*,\s*)upgrade($|\s*,)`)

func isWebSocket(r *http.Request) bool {
	return connectionUpgrade.MatchString(strings.ToLower(r.Header.Get("Connection"))) &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func (a websocketAuthenticator) authenticate(r *http.Request) (*User, bool, error) {
	if !isWebSocket(r) {
		return nil, false, nil
	}
	var token string
	var others []string
	seen := false
	for _, header := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(header, ",") {
			p = strings.TrimSpace(p)
			encoded, isToken := strings.CutPrefix(p, bearerProtocolPrefix)
			if !isToken {
				others = append(others, p)
				continue
			}
			if seen {
				return nil, false, errors.New("multiple base64.bearer.authorization tokens specified")
			}
			seen = true
			decoded, err := base64.RawURLEncoding.DecodeString(encoded)
			if err != nil {
				return nil, false, errors.New("invalid base64.bearer.authorization token encoding")
			}
			if !utf8.Valid(decoded) {
				return nil, false, errors.New("invalid base64.bearer.authorization token")
			}
			token = string(decoded)
		}
	}
	if token == "" {
		return nil, false, nil
	}
	// Another subprotocol must remain to be echoed back to the client.
	if len(others) == 0 {
		return nil, false, errors.New("missing additional subprotocol")
	}
	u, ok, err := a.tokens.authenticateToken(r.Context(), token)
	if ok {
		r.Header.Set("Sec-WebSocket-Protocol", strings.Join(others, ","))
	}
	if !ok && err == nil {
		err = errInvalidToken
	}
	return u, ok, err
}

// credentialID fingerprints a certificate for CredentialIDKey.
func credentialID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "X509SHA256=" + hex.EncodeToString(sum[:])
}
