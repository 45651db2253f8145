package podinputs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// Token refresh rules, as upstream's token manager: a token is renewed once
// 80% of its lifetime has passed or it is 24 hours old, each moved earlier
// by a random jitter of up to 10 s so that many pods do not renew at once.
const (
	maxTokenAge     = 24 * time.Hour
	maxTokenJitter  = 10 * time.Second
	tokenSweepEvery = time.Minute
)

// TokenNeedsRefresh reports whether the token tr (a TokenRequest answered by
// the API server) should be requested again at now. jitter is subtracted
// from both deadlines. It is pure.
func TokenNeedsRefresh(tr *authenticationv1.TokenRequest, now time.Time, jitter time.Duration) bool {
	if tr.Spec.ExpirationSeconds == nil {
		// The API server always answers with the lifetime it granted;
		// without one there is no deadline to compute, only expiry.
		return !now.Before(tr.Status.ExpirationTimestamp.Time)
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-ttl)
	switch {
	case now.Before(issued):
		// The clock went back past the issue time: the token's times
		// cannot be trusted.
		return true
	case now.After(issued.Add(maxTokenAge - jitter)):
		return true
	case now.After(exp.Add(-ttl/5 - jitter)):
		return true
	}
	return false
}

// tokenKey identifies a cached token; it holds nothing secret.
type tokenKey struct {
	namespace, serviceAccount string
	// accountUID, when set, is the UID the account must have.
	accountUID           types.UID
	audiences            string
	expirationSeconds    int64
	boundKind, boundName string
	boundUID             types.UID
}

func keyOf(namespace, sa string, uid types.UID, spec *authenticationv1.TokenRequestSpec) tokenKey {
	k := tokenKey{namespace: namespace, serviceAccount: sa, accountUID: uid, audiences: fmt.Sprintf("%q", spec.Audiences)}
	if spec.ExpirationSeconds != nil {
		k.expirationSeconds = *spec.ExpirationSeconds
	}
	if r := spec.BoundObjectRef; r != nil {
		k.boundKind, k.boundName, k.boundUID = r.Kind, r.Name, r.UID
	}
	return k
}

func (k tokenKey) String() string {
	return fmt.Sprintf("%s/%s aud=%s exp=%d bound=%s/%s(%s)", k.namespace, k.serviceAccount, k.audiences, k.expirationSeconds, k.boundKind, k.boundName, k.boundUID)
}

// TokenRequester asks the API server for a token of service account name in
// namespace (POST .../serviceaccounts/<name>/token).
type TokenRequester func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

// ClientTokenRequester is the TokenRequest API through client.
func ClientTokenRequester(client kubeclient.Interface) TokenRequester {
	return func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
		return client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
	}
}

// TokensConfig configures Tokens.
type TokensConfig struct {
	// Request reaches the TokenRequest API. Required.
	Request TokenRequester
	// Clock decides refreshes; nil means the real clock.
	Clock clock.Clock
	// Jitter returns how much earlier than its deadline a token may be
	// renewed; nil means a random duration below 10 s.
	Jitter func() time.Duration
}

// Tokens hands out service account tokens for projected volumes, cached per
// (namespace, service account, audiences, expiration, bound pod) and renewed
// per TokenNeedsRefresh. Safe for concurrent use.
type Tokens struct {
	request TokenRequester
	clock   clock.Clock
	jitter  func() time.Duration

	mu        sync.Mutex
	cache     map[tokenKey]*authenticationv1.TokenRequest
	lastSweep time.Time
}

// NewTokens returns Tokens for cfg; it panics without a Request.
func NewTokens(cfg TokensConfig) *Tokens {
	if cfg.Request == nil {
		panic("podinputs.NewTokens: TokensConfig.Request is required")
	}
	t := &Tokens{request: cfg.Request, clock: cfg.Clock, jitter: cfg.Jitter, cache: map[tokenKey]*authenticationv1.TokenRequest{}}
	if t.clock == nil {
		t.clock = clock.RealClock{}
	}
	if t.jitter == nil {
		t.jitter = func() time.Duration { return rand.N(maxTokenJitter) }
	}
	t.lastSweep = t.clock.Now()
	return t
}

// ServiceAccountToken returns a token for service account name in namespace
// as spec asks: the cached one while it needs no refresh, else a new one
// from the API server. When a refresh fails the cached token is returned
// while it has not expired (and the failure logged); callers must not modify
// the result.
func (t *Tokens) ServiceAccountToken(ctx context.Context, namespace, name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	return t.AccountToken(ctx, namespace, name, "", spec)
}

// AccountToken is ServiceAccountToken for the account with UID uid (the
// API server refuses the request when the account's UID differs, as for
// an account deleted and made again); "" means any.
func (t *Tokens) AccountToken(ctx context.Context, namespace, name string, uid types.UID, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	key := keyOf(namespace, name, uid, &spec)
	now := t.clock.Now()
	t.mu.Lock()
	cached, ok := t.cache[key]
	t.sweepLocked(now)
	t.mu.Unlock()
	if ok && !TokenNeedsRefresh(cached, now, t.jitter()) {
		return cached, nil
	}
	got, err := t.request(ctx, namespace, name, &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: uid}, Spec: *spec.DeepCopy()})
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case !now.Before(cached.Status.ExpirationTimestamp.Time):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		default:
			klog.ErrorS(err, "Couldn't update token, serving the cached one until it expires", "cacheKey", key.String(), "expires", cached.Status.ExpirationTimestamp.Time)
			return cached, nil
		}
	}
	if got.Spec.ExpirationSeconds == nil {
		// Keep the lifetime asked for, so the refresh deadline is known.
		got = got.DeepCopy()
		got.Spec.ExpirationSeconds = spec.ExpirationSeconds
	}
	klog.V(4).InfoS("Got service account token", "cacheKey", key.String(), "expires", got.Status.ExpirationTimestamp.Time, "refresh", ok)
	t.mu.Lock()
	t.cache[key] = got
	t.mu.Unlock()
	return got, nil
}

// ForgetPod drops the tokens bound to pod uid (the pod is gone).
func (t *Tokens) ForgetPod(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.cache {
		if k.boundUID == uid {
			delete(t.cache, k)
		}
	}
}

// sweepLocked drops expired tokens, at most once per tokenSweepEvery.
func (t *Tokens) sweepLocked(now time.Time) {
	if now.Sub(t.lastSweep) < tokenSweepEvery {
		return
	}
	t.lastSweep = now
	for k, tr := range t.cache {
		if !now.Before(tr.Status.ExpirationTimestamp.Time) {
			delete(t.cache, k)
		}
	}
}

// Len is the number of cached tokens.
func (t *Tokens) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cache)
}
