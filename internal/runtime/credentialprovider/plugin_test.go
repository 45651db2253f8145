package credentialprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeRunner answers like a plugin and counts its runs.
type fakeRunner struct {
	mu       sync.Mutex
	calls    []string // image|token|annotations
	response func(image, token string) (*response, error)
}

func (f *fakeRunner) run(_ context.Context, image, token string, annotations map[string]string) (*response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("%s|%s|%v", image, token, annotations))
	f.mu.Unlock()
	return f.response(image, token)
}

func answer(keyType credentialproviderv1.PluginCacheKeyType, ttl *time.Duration, user string) func(string, string) (*response, error) {
	return func(image, token string) (*response, error) {
		r := &response{CacheKeyType: keyType, Auth: map[string]credentialproviderv1.AuthConfig{
			registryOf(image): {Username: user, Password: "secret"},
		}}
		if ttl != nil {
			r.CacheDuration = &metav1.Duration{Duration: *ttl}
		}
		return r, nil
	}
}

func newTestPlugin(clk *testingclock.FakeClock, r runner, defaultTTL time.Duration) *plugin {
	return &plugin{name: "test", matchImages: []string{"*.registry.io", "registry.io"}, defaultCacheDuration: defaultTTL,
		runner: r, clock: clk, cache: map[string]cacheEntry{}, lastPurge: clk.Now()}
}

// The plugin is run only for matching images and not again while its
// answer is cached, by the cacheKeyType it gave, for cacheDuration (or the
// default); a zero duration is never cached.
func TestPluginCache(t *testing.T) {
	minute, zero := time.Minute, time.Duration(0)
	type step struct {
		advance time.Duration
		image   string
		runs    int // total runs after this step
		user    string
	}
	for _, tc := range []struct {
		name       string
		keyType    credentialproviderv1.PluginCacheKeyType
		ttl        *time.Duration
		defaultTTL time.Duration
		steps      []step
	}{
		{name: "Image key: per image, until the duration runs out", keyType: credentialproviderv1.ImagePluginCacheKeyType, ttl: &minute, steps: []step{
			{image: "a.registry.io/app", runs: 1, user: "u"},
			{advance: 30 * time.Second, image: "a.registry.io/app", runs: 1, user: "u"},
			{image: "a.registry.io/other", runs: 2, user: "u"},
			{advance: 31 * time.Second, image: "a.registry.io/app", runs: 3, user: "u"},
		}},
		{name: "Registry key: every image of the registry", keyType: credentialproviderv1.RegistryPluginCacheKeyType, ttl: &minute, steps: []step{
			{image: "a.registry.io/app", runs: 1, user: "u"},
			{image: "a.registry.io/other", runs: 1, user: "u"},
			{image: "b.registry.io/app", runs: 2, user: "u"},
		}},
		{name: "Global key: every image", keyType: credentialproviderv1.GlobalPluginCacheKeyType, ttl: &minute, steps: []step{
			{image: "a.registry.io/app", runs: 1, user: "u"},
			{image: "b.registry.io/other", runs: 1, user: "u"},
		}},
		{name: "no cacheDuration: the default", keyType: credentialproviderv1.ImagePluginCacheKeyType, defaultTTL: 5 * time.Minute, steps: []step{
			{image: "registry.io/app", runs: 1, user: "u"},
			{advance: 4 * time.Minute, image: "registry.io/app", runs: 1, user: "u"},
			{advance: 2 * time.Minute, image: "registry.io/app", runs: 2, user: "u"},
		}},
		{name: "cacheDuration 0: never cached", keyType: credentialproviderv1.ImagePluginCacheKeyType, ttl: &zero, defaultTTL: time.Hour, steps: []step{
			{image: "registry.io/app", runs: 1, user: "u"},
			{image: "registry.io/app", runs: 2, user: "u"},
		}},
		{name: "no duration and default 0: never cached", keyType: credentialproviderv1.ImagePluginCacheKeyType, steps: []step{
			{image: "registry.io/app", runs: 1, user: "u"},
			{image: "registry.io/app", runs: 2, user: "u"},
		}},
		{name: "images the plugin does not match: not run", keyType: credentialproviderv1.GlobalPluginCacheKeyType, ttl: &minute, steps: []step{
			{image: "quay.io/app", runs: 0},
			{image: "a.b.registry.io/app", runs: 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(1000, 0))
			r := &fakeRunner{response: answer(tc.keyType, tc.ttl, "u")}
			p := newTestPlugin(clk, r, tc.defaultTTL)
			for i, s := range tc.steps {
				clk.Step(s.advance)
				creds, err := p.provide(context.Background(), s.image, PodInfo{})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if len(r.calls) != s.runs {
					t.Errorf("step %d (%s): plugin run %d times, want %d", i, s.image, len(r.calls), s.runs)
				}
				got := ""
				for _, e := range creds {
					got = e.Username
				}
				if got != s.user {
					t.Errorf("step %d: credentials %v, want user %q", i, creds, s.user)
				}
			}
		})
	}
}

func TestPluginBadAnswers(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	p := newTestPlugin(clk, &fakeRunner{response: answer("Pod", nil, "u")}, time.Minute)
	if _, err := p.provide(context.Background(), "registry.io/app", PodInfo{}); err == nil || err.Error() != "credential provider plugin did not return a valid cacheKeyType: Pod" {
		t.Errorf("bad cacheKeyType: %v", err)
	}
	p = newTestPlugin(clk, &fakeRunner{response: func(string, string) (*response, error) { return nil, errors.New("exit status 1: boom") }}, time.Minute)
	if _, err := p.provide(context.Background(), "registry.io/app", PodInfo{}); err == nil ||
		err.Error() != "failed to get credential from external registry credential provider: exit status 1: boom" {
		t.Errorf("failing plugin: %v", err)
	}
}

// fakeAccounts serves service accounts and hands out numbered tokens.
type fakeAccounts struct {
	accounts map[string]*v1.ServiceAccount
	tokens   int
	asked    []*authenticationv1.TokenRequest
	// fixedToken, when set, is every token handed out (a token cache hit).
	fixedToken string
}

func (f *fakeAccounts) ServiceAccount(_ context.Context, ns, name string) (*v1.ServiceAccount, error) {
	if sa, ok := f.accounts[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, fmt.Errorf("serviceaccounts %q not found", name)
}

func (f *fakeAccounts) Token(_ context.Context, ns, name string, tr *authenticationv1.TokenRequest) (string, error) {
	f.asked = append(f.asked, tr)
	if f.fixedToken != "" {
		return f.fixedToken, nil
	}
	f.tokens++
	return fmt.Sprintf("token-%d", f.tokens), nil
}

// The service account token mode, as upstream v1.36: the token (with the
// plugin's audience, bound to the pod, for the account's UID) and the
// annotations asked for go to the plugin; the cache is per service account
// (and per token with cacheType Token); pods without an account, or whose
// account lacks a required annotation, do not run the plugin; a plugin
// echoing the token as a password is refused unless cacheType is Token.
func TestServiceAccountTokenMode(t *testing.T) {
	hour := time.Hour
	accounts := func() *fakeAccounts {
		return &fakeAccounts{accounts: map[string]*v1.ServiceAccount{
			"ns/builder": {ObjectMeta: metav1.ObjectMeta{Name: "builder", UID: "sa-uid",
				Annotations: map[string]string{"example.com/role": "puller", "example.com/extra": "x", "unrelated": "y"}}},
			"ns/plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain", UID: "plain-uid"}},
		}}
	}
	pod := func(name, sa string) PodInfo {
		return PodInfo{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), ServiceAccountName: sa}
	}
	newPlugin := func(acc ServiceAccounts, cacheType kubeletconfigv1.ServiceAccountTokenCacheType, require bool, required []string, resp func(string, string) (*response, error)) (*plugin, *fakeRunner) {
		clk := testingclock.NewFakeClock(time.Unix(1000, 0))
		r := &fakeRunner{response: resp}
		p := newTestPlugin(clk, r, time.Hour)
		p.sa = &saMode{audience: "registry-aud", requireServiceAccount: require, required: required,
			optional: []string{"example.com/extra"}, cacheType: cacheType, accounts: acc}
		return p, r
	}
	ctx := context.Background()

	t.Run("ServiceAccount cache: one run per account", func(t *testing.T) {
		acc := accounts()
		p, r := newPlugin(acc, kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, true, []string{"example.com/role"},
			answer(credentialproviderv1.ImagePluginCacheKeyType, &hour, "u"))
		for _, name := range []string{"a", "b"} {
			if creds, err := p.provide(ctx, "registry.io/app", pod(name, "builder")); err != nil || creds["registry.io"].Username != "u" {
				t.Fatalf("pod %s: %v %v", name, creds, err)
			}
		}
		if want := []string{"registry.io/app|token-1|map[example.com/extra:x example.com/role:puller]"}; strings.Join(r.calls, ",") != strings.Join(want, ",") {
			t.Errorf("runs %q, want %q", r.calls, want)
		}
		tr := acc.asked[0]
		if tr.UID != "sa-uid" || tr.Spec.Audiences[0] != "registry-aud" || tr.Spec.BoundObjectRef.Kind != "Pod" ||
			tr.Spec.BoundObjectRef.Name != "a" || tr.Spec.BoundObjectRef.UID != "a-uid" || tr.Spec.ExpirationSeconds != nil {
			t.Errorf("token request %+v", tr)
		}
		// An account without the required annotation gets nothing.
		if creds, err := p.provide(ctx, "registry.io/app", pod("c", "plain")); creds != nil || err != nil || len(r.calls) != 1 {
			t.Errorf("account without the annotation: creds %v err %v runs %d", creds, err, len(r.calls))
		}
	})
	t.Run("Token cache: one run per token", func(t *testing.T) {
		acc := accounts()
		p, r := newPlugin(acc, kubeletconfigv1.TokenServiceAccountTokenCacheType, true, nil, answer(credentialproviderv1.ImagePluginCacheKeyType, &hour, "u"))
		p.provide(ctx, "registry.io/app", pod("a", "builder"))
		p.provide(ctx, "registry.io/app", pod("b", "builder"))
		if len(r.calls) != 2 {
			t.Errorf("runs %q, want one per token", r.calls)
		}
		acc.fixedToken = "same"
		p.provide(ctx, "registry.io/app", pod("c", "builder"))
		p.provide(ctx, "registry.io/app", pod("d", "builder"))
		if len(r.calls) != 3 {
			t.Errorf("runs %q, want the same token served from the cache", r.calls)
		}
	})
	t.Run("no service account", func(t *testing.T) {
		p, r := newPlugin(accounts(), kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, true, nil, answer(credentialproviderv1.ImagePluginCacheKeyType, &hour, "u"))
		if creds, err := p.provide(ctx, "registry.io/app", pod("static", "")); creds != nil || err != nil || len(r.calls) != 0 {
			t.Errorf("requireServiceAccount: creds %v err %v runs %d; want the plugin not run", creds, err, len(r.calls))
		}
		p, r = newPlugin(accounts(), kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, false, nil, answer(credentialproviderv1.ImagePluginCacheKeyType, &hour, "u"))
		if creds, err := p.provide(ctx, "registry.io/app", pod("static", "")); creds == nil || err != nil || strings.Join(r.calls, ",") != "registry.io/app||map[]" {
			t.Errorf("requireServiceAccount false: creds %v err %v runs %q; want a run without a token", creds, err, r.calls)
		}
	})
	t.Run("missing required annotation: not run, no error", func(t *testing.T) {
		p, r := newPlugin(accounts(), kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, true, []string{"example.com/role"},
			answer(credentialproviderv1.ImagePluginCacheKeyType, &hour, "u"))
		if creds, err := p.provide(ctx, "registry.io/app", pod("a", "plain")); creds != nil || err != nil || len(r.calls) != 0 {
			t.Errorf("creds %v err %v runs %d", creds, err, len(r.calls))
		}
	})
	t.Run("token echoed as password", func(t *testing.T) {
		echo := func(image, token string) (*response, error) {
			return &response{CacheKeyType: credentialproviderv1.ImagePluginCacheKeyType,
				Auth: map[string]credentialproviderv1.AuthConfig{"registry.io": {Username: "t", Password: token}}}, nil
		}
		p, _ := newPlugin(accounts(), kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, true, nil, echo)
		if _, err := p.provide(ctx, "registry.io/app", pod("a", "builder")); err == nil || !strings.Contains(err.Error(), "returned the service account token as the password") {
			t.Errorf("ServiceAccount cache type: %v", err)
		}
		p, _ = newPlugin(accounts(), kubeletconfigv1.TokenServiceAccountTokenCacheType, true, nil, echo)
		if creds, err := p.provide(ctx, "registry.io/app", pod("a", "builder")); err != nil || creds["registry.io"].Password != "token-1" {
			t.Errorf("Token cache type: %v %v", creds, err)
		}
	})
	t.Run("standalone", func(t *testing.T) {
		p, _ := newPlugin(standaloneAccounts{}, kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType, true, nil, answer(credentialproviderv1.ImagePluginCacheKeyType, &hour, "u"))
		if _, err := p.provide(ctx, "registry.io/app", pod("a", "builder")); !errors.Is(err, errStandalone) {
			t.Errorf("err %v", err)
		}
	})
}

// helperEnv makes the test binary act as a plugin (see TestMain).
const helperEnv = "CREDENTIALPROVIDER_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperPlugin(mode))
	}
	os.Exit(m.Run())
}

// helperPlugin is a plugin: it echoes the request's image, token and
// environment into the username, or misbehaves as mode says.
func helperPlugin(mode string) int {
	in, _ := io.ReadAll(os.Stdin)
	var req credentialproviderv1.CredentialProviderRequest
	if err := json.Unmarshal(in, &req); err != nil || req.Kind != "CredentialProviderRequest" {
		fmt.Fprintf(os.Stderr, "bad request %s", in)
		return 2
	}
	switch mode {
	case "fail":
		fmt.Fprint(os.Stderr, "registry said no")
		return 1
	case "hang":
		time.Sleep(time.Minute)
	case "wrong-version":
		fmt.Print(`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image"}`)
		return 0
	case "wrong-kind":
		fmt.Printf(`{"apiVersion":%q,"kind":"CredentialProviderRequest","cacheKeyType":"Image"}`, req.APIVersion)
		return 0
	case "unknown-field":
		fmt.Printf(`{"apiVersion":%q,"kind":"CredentialProviderResponse","cacheKeyType":"Image","secret":"do-not-log"}`, req.APIVersion)
		return 0
	}
	user := req.Image + "/" + req.ServiceAccountToken + "/" + os.Getenv("FROM_CONFIG") + "/" + strings.Join(os.Args[1:], " ")
	out, _ := json.Marshal(credentialproviderv1.CredentialProviderResponse{
		TypeMeta:     metav1.TypeMeta{APIVersion: req.APIVersion, Kind: "CredentialProviderResponse"},
		CacheKeyType: credentialproviderv1.RegistryPluginCacheKeyType,
		Auth:         map[string]credentialproviderv1.AuthConfig{"registry.io": {Username: user, Password: "p"}},
	})
	os.Stdout.Write(out)
	return 0
}

// Plugins run as processes, as upstream: request on stdin, arguments and
// environment from the configuration, response checked strictly; a plugin
// that fails, hangs or answers wrongly is named and left out.
func TestExecPlugin(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, want, wantErr string
	}{
		{mode: "ok", want: "registry.io/app//from-config/--flag"},
		{mode: "fail", wantErr: "error execing credential provider plugin test for image registry.io/app: exit status 1: registry said no"},
		{mode: "hang", wantErr: "error execing credential provider plugin test for image registry.io/app: context deadline exceeded"},
		{mode: "wrong-version", wantErr: "apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1"},
		{mode: "wrong-kind", wantErr: `failed to decode CredentialProviderResponse, unexpected Kind: "CredentialProviderRequest"`},
		{mode: "unknown-field", wantErr: "error decoding credential provider plugin response from stdout"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := &execPlugin{name: "test", path: self, apiVersion: pluginV1, args: []string{"--flag"},
				env: []string{helperEnv + "=" + tc.mode, "FROM_CONFIG=from-config"}, timeout: 2 * time.Second, metrics: newMetrics("h")}
			resp, err := e.run(context.Background(), "registry.io/app", "", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "do-not-log") {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || resp.Auth["registry.io"].Username != tc.want {
				t.Fatalf("resp %+v err %v, want user %q", resp, err, tc.want)
			}
		})
	}
}

// New reads the configuration and finds the binaries; Lookup merges the
// plugins' answers as a keyring; Sources put pull secrets first and keep
// them when a plugin fails.
func TestNewAndSources(t *testing.T) {
	bin := t.TempDir()
	self, _ := os.Executable()
	for _, name := range []string{"good", "bad"} {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeFiles(t, map[string]string{"c.yaml": `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: good
  matchImages: ["registry.io"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  env: [{name: ` + helperEnv + `, value: ok}]
- name: bad
  matchImages: ["*.io"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  env: [{name: ` + helperEnv + `, value: fail}]
`})
	ps, err := New(Config{ConfigPath: filepath.Join(cfg, "c.yaml"), BinDir: bin, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	secrets := func(context.Context, *v1.Pod, string) []*runtimeapi.AuthConfig {
		return []*runtimeapi.AuthConfig{{Username: "from-secret"}}
	}
	s := Sources{PullSecrets: secrets, Plugins: ps}
	got, err := s.Lookup(context.Background(), &v1.Pod{}, "registry.io/app:1")
	var users []string
	for _, a := range got {
		users = append(users, a.Username)
	}
	if strings.Join(users, ",") != "from-secret,registry.io/app///" {
		t.Errorf("credentials %q", users)
	}
	if err == nil || !strings.Contains(err.Error(), `credential provider plugin "bad": failed to get credential from external registry credential provider: error execing credential provider plugin bad for image registry.io/app: exit status 1: registry said no`) {
		t.Errorf("err %v", err)
	}

	if _, err := New(Config{ConfigPath: filepath.Join(cfg, "c.yaml"), BinDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "plugin binary executable") || !strings.Contains(err.Error(), "did not exist") {
		t.Errorf("missing binary: %v", err)
	}
	if _, err := New(Config{ConfigPath: filepath.Join(cfg, "c.yaml"), BinDir: "/nonexistent"}); err == nil || err.Error() != "plugin binary directory /nonexistent did not exist" {
		t.Errorf("missing bin dir: %v", err)
	}
}
