package podinputs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func i64(v int64) *int64 { return &v }

// issued is a token issued at iat for ttl.
func issued(iat time.Time, ttl time.Duration) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{
		Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: i64(int64(ttl / time.Second))},
		Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(iat.Add(ttl))},
	}
}

func TestTokenNeedsRefresh(t *testing.T) {
	iat := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		tr     *authenticationv1.TokenRequest
		now    time.Time
		jitter time.Duration
		want   bool
	}{
		{name: "fresh", tr: issued(iat, time.Hour), now: iat.Add(time.Minute)},
		{name: "just before 80% of the lifetime", tr: issued(iat, time.Hour), now: iat.Add(48*time.Minute - time.Second)},
		{name: "past 80% of the lifetime", tr: issued(iat, time.Hour), now: iat.Add(48*time.Minute + time.Second), want: true},
		{name: "jitter renews earlier", tr: issued(iat, time.Hour), now: iat.Add(48*time.Minute - 5*time.Second), jitter: 10 * time.Second, want: true},
		{name: "10 minute token at 7m59s", tr: issued(iat, 10*time.Minute), now: iat.Add(8*time.Minute - time.Second)},
		{name: "10 minute token at 8m01s", tr: issued(iat, 10*time.Minute), now: iat.Add(8*time.Minute + time.Second), want: true},
		{name: "one-year token before 24h", tr: issued(iat, 365*24*time.Hour), now: iat.Add(23 * time.Hour)},
		{name: "one-year token after 24h", tr: issued(iat, 365*24*time.Hour), now: iat.Add(24*time.Hour + time.Second), want: true},
		{name: "clock went back before issue", tr: issued(iat, time.Hour), now: iat.Add(-time.Minute), want: true},
		{name: "expired", tr: issued(iat, time.Hour), now: iat.Add(2 * time.Hour), want: true},
		{name: "no lifetime, not expired", tr: &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(iat.Add(time.Hour))}}, now: iat.Add(59 * time.Minute)},
		{name: "no lifetime, expired", tr: &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(iat.Add(time.Hour))}}, now: iat.Add(time.Hour), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TokenNeedsRefresh(tc.tr, tc.now, tc.jitter); got != tc.want {
				t.Fatalf("TokenNeedsRefresh = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeAPI answers TokenRequests like the API server: the token names the
// call, the expiration is now + the lifetime asked (default 1h).
type fakeAPI struct {
	clock *clocktesting.FakeClock
	calls int
	err   error
	got   []*authenticationv1.TokenRequest
}

func (f *fakeAPI) request(_ context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.got = append(f.got, tr)
	if f.err != nil {
		return nil, f.err
	}
	f.calls++
	out := tr.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		out.Spec.ExpirationSeconds = i64(3600)
	}
	out.Status.Token = fmt.Sprintf("%s/%s#%d", namespace, name, f.calls)
	out.Status.ExpirationTimestamp = metav1.NewTime(f.clock.Now().Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

func spec(uid types.UID, aud string, exp int64) authenticationv1.TokenRequestSpec {
	s := authenticationv1.TokenRequestSpec{ExpirationSeconds: i64(exp), BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "p", UID: uid}}
	if aud != "" {
		s.Audiences = []string{aud}
	}
	return s
}

func TestTokensCacheAndRefresh(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	api := &fakeAPI{clock: clk}
	tokens := NewTokens(TokensConfig{Request: api.request, Clock: clk, Jitter: func() time.Duration { return 0 }})
	get := func(s authenticationv1.TokenRequestSpec) string {
		t.Helper()
		tr, err := tokens.ServiceAccountToken(ctx, "ns", "sa", s)
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	first := get(spec("u1", "", 600))
	if api.calls != 1 || first != "ns/sa#1" {
		t.Fatalf("first token %q after %d calls", first, api.calls)
	}
	if got := api.got[0].Spec; *got.ExpirationSeconds != 600 || got.BoundObjectRef.UID != "u1" || len(got.Audiences) != 0 {
		t.Fatalf("request spec %+v", got)
	}
	// Cached until 80% of its 10 minutes.
	clk.Step(7 * time.Minute)
	if got := get(spec("u1", "", 600)); got != first || api.calls != 1 {
		t.Fatalf("at 7m: %q after %d calls, want the cached token", got, api.calls)
	}
	// Each of audience, lifetime and pod is its own token.
	get(spec("u1", "vault", 600))
	get(spec("u1", "", 3607))
	get(spec("u2", "", 600))
	if api.calls != 4 || tokens.Len() != 4 {
		t.Fatalf("%d calls, %d cached; want one token per key", api.calls, tokens.Len())
	}
	// Past 8 minutes: renewed.
	clk.Step(90 * time.Second)
	if got := get(spec("u1", "", 600)); got == first || api.calls != 5 {
		t.Fatalf("at 8m30s: %q after %d calls, want a new token", got, api.calls)
	}

	// A failed renewal serves the cached token while it is valid...
	renewed := get(spec("u1", "", 600))
	clk.Step(9 * time.Minute)
	api.err = errors.New("apiserver down")
	if got := get(spec("u1", "", 600)); got != renewed {
		t.Fatalf("failed renewal served %q, want the cached %q", got, renewed)
	}
	// ...and fails once it has expired.
	clk.Step(2 * time.Minute)
	if _, err := tokens.ServiceAccountToken(ctx, "ns", "sa", spec("u1", "", 600)); err == nil || !strings.Contains(err.Error(), "expired and refresh failed: apiserver down") {
		t.Fatalf("err %v", err)
	}
	// Never fetched: the error says so.
	if _, err := tokens.ServiceAccountToken(ctx, "ns", "other", spec("u9", "", 600)); err == nil || !strings.Contains(err.Error(), "failed to fetch token: apiserver down") {
		t.Fatalf("err %v", err)
	}
}

func TestTokensForgetAndSweep(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	api := &fakeAPI{clock: clk}
	tokens := NewTokens(TokensConfig{Request: api.request, Clock: clk, Jitter: func() time.Duration { return 0 }})
	for _, s := range []authenticationv1.TokenRequestSpec{spec("u1", "", 600), spec("u1", "a", 600), spec("u2", "", 3600)} {
		if _, err := tokens.ServiceAccountToken(ctx, "ns", "sa", s); err != nil {
			t.Fatal(err)
		}
	}
	tokens.ForgetPod("u1")
	if tokens.Len() != 1 {
		t.Fatalf("%d cached after forgetting u1, want 1", tokens.Len())
	}
	if _, err := tokens.ServiceAccountToken(ctx, "ns", "sa", spec("u3", "", 600)); err != nil {
		t.Fatal(err)
	}
	// After 11 minutes u3's token has expired; the next call sweeps it.
	clk.Step(11 * time.Minute)
	if _, err := tokens.ServiceAccountToken(ctx, "ns", "sa", spec("u2", "", 3600)); err != nil {
		t.Fatal(err)
	}
	if tokens.Len() != 1 {
		t.Fatalf("%d cached after the sweep, want only u2's", tokens.Len())
	}
}
