package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"maps"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// tokenReviewAuthenticator asks the API server who owns a token.
type tokenReviewAuthenticator struct {
	client kubeclient.TokenReviewInterface
	retry  retryBackoff
	clock  clock.Clock
}

func (a *tokenReviewAuthenticator) authenticateToken(ctx context.Context, token string) (*User, bool, error) {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var result *authenticationv1.TokenReview
	err := withRetry(ctx, a.clock, a.retry, func() error {
		var err error
		result, err = a.client.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		klog.ErrorS(err, "Failed to make webhook authenticator request")
		return nil, false, err
	}
	status := result.Status
	if !status.Authenticated {
		if status.Error != "" {
			return nil, false, errors.New(status.Error)
		}
		return nil, false, nil
	}
	var extra map[string][]string
	if status.User.Extra != nil {
		extra = make(map[string][]string, len(status.User.Extra))
		for k, v := range status.User.Extra {
			extra[k] = v
		}
	}
	return &User{Name: status.User.Username, UID: status.User.UID, Groups: status.User.Groups, Extra: extra}, true, nil
}

// tokenCacheSize bounds the cached token results.
const tokenCacheSize = 4096

// cachedTokenAuthenticator remembers accepted and rejected tokens for ttl,
// as upstream does (both use cacheTTL); errors are not remembered. Tokens
// are keyed by a keyed hash so they do not stay in memory.
type cachedTokenAuthenticator struct {
	next  tokenAuthenticator
	ttl   time.Duration
	key   []byte
	cache *expiringCache[tokenResult]
}

type tokenResult struct {
	user *User
	ok   bool
}

func newCachedTokenAuthenticator(next tokenAuthenticator, ttl time.Duration, clk clock.PassiveClock) *cachedTokenAuthenticator {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &cachedTokenAuthenticator{next: next, ttl: ttl, key: key, cache: newExpiringCache[tokenResult](clk, tokenCacheSize)}
}

func (a *cachedTokenAuthenticator) authenticateToken(ctx context.Context, token string) (*User, bool, error) {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(token))
	key := string(mac.Sum(nil))
	if r, ok := a.cache.get(key); ok {
		return copyUser(r.user), r.ok, nil
	}
	u, ok, err := a.next.authenticateToken(ctx, token)
	if err != nil {
		return nil, false, err
	}
	a.cache.set(key, tokenResult{user: copyUser(u), ok: ok}, a.ttl)
	return u, ok, nil
}

func copyUser(u *User) *User {
	if u == nil {
		return nil
	}
	cp := *u
	cp.Groups = append([]string(nil), u.Groups...)
	if u.Extra != nil {
		cp.Extra = maps.Clone(u.Extra)
	}
	return &cp
}
