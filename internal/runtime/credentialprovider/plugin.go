package credentialprovider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"k8s.io/utils/clock"
	sigsjson "sigs.k8s.io/json"
)

const (
	// globalCacheKey caches credentials for every image; the angle
	// brackets keep it apart from any image or registry name.
	globalCacheKey = "<global>"
	// cachePurgeEvery drops expired entries no lookup asked for again.
	cachePurgeEvery = 15 * time.Minute
	// DefaultPluginTimeout bounds one run of a plugin, as upstream's
	// catch-all minute.
	DefaultPluginTimeout = time.Minute
	responseKind         = "CredentialProviderResponse"
	requestKind          = "CredentialProviderRequest"
)

// PodInfo is what a lookup knows of the pod whose image is pulled.
type PodInfo struct {
	Namespace, Name    string
	UID                types.UID
	ServiceAccountName string
}

// PodInfoOf is pod's PodInfo.
func PodInfoOf(pod *v1.Pod) PodInfo {
	return PodInfo{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ServiceAccountName: pod.Spec.ServiceAccountName}
}

// ServiceAccounts is what the service account token mode needs of the API
// server: the pod's service account, and a token bound to the pod.
type ServiceAccounts interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error)
	// Token returns a token of the service account (tr's UID, when set,
	// must be the account's), cached as the kubelet caches tokens.
	Token(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (string, error)
}

// response is a plugin's answer once checked.
type response = credentialproviderv1.CredentialProviderResponse

// runner runs a plugin once: the request in, its response out.
type runner interface {
	run(ctx context.Context, image, token string, annotations map[string]string) (*response, error)
}

// plugin is one configured provider: which images it serves, its cache,
// and how to run it.
type plugin struct {
	name                 string
	matchImages          []string
	defaultCacheDuration time.Duration
	runner               runner
	clock                clock.Clock
	// sa is set when the plugin asks for service account tokens.
	sa *saMode

	group     singleflight.Group
	mu        sync.Mutex
	cache     map[string]cacheEntry
	lastPurge time.Time
}

type cacheEntry struct {
	creds   DockerConfig
	expires time.Time
}

// saMode is a provider's tokenAttributes.
type saMode struct {
	audience              string
	requireServiceAccount bool
	required, optional    []string
	cacheType             kubeletconfigv1.ServiceAccountTokenCacheType
	accounts              ServiceAccounts
}

// errRequiredAnnotation: the service account lacks an annotation the
// plugin requires, the way workloads opt in; the plugin is not run.
var errRequiredAnnotation = errors.New("required annotation not found")

// provide returns the credentials the plugin gives for image (a
// repository), from its cache or by running it. No credentials and no
// error means the plugin does not serve this image or pod.
func (p *plugin) provide(ctx context.Context, image string, pod PodInfo) (DockerConfig, error) {
	if !p.matches(image) {
		return nil, nil
	}
	var token, tokenHash, saKey string
	var annotations map[string]string
	if p.sa != nil {
		if pod.ServiceAccountName == "" && p.sa.requireServiceAccount {
			klog.V(5).InfoS("Service account name is empty", "provider", p.name, "image", image, "pod", klog.KRef(pod.Namespace, pod.Name))
			return nil, nil
		}
		if pod.ServiceAccountName != "" {
			var uid types.UID
			var err error
			uid, annotations, err = p.sa.accountData(ctx, pod.Namespace, pod.ServiceAccountName)
			if errors.Is(err, errRequiredAnnotation) {
				klog.V(5).InfoS("Service account lacks an annotation the plugin requires; not running it", "provider", p.name, "image", image,
					"serviceAccount", klog.KRef(pod.Namespace, pod.ServiceAccountName), "err", err)
				return nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("failed to get service account: %w", err)
			}
			if token, err = p.sa.token(ctx, pod, uid); err != nil {
				return nil, fmt.Errorf("failed to get service account token: %w", err)
			}
			tokenHash = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(token)))
			parts := []string{pod.Namespace, pod.ServiceAccountName, string(uid), annotationsKey(annotations)}
			if p.sa.cacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
				parts = append(parts, "token", tokenHash)
			}
			saKey = joinKey(parts...)
		}
	}
	if creds, ok := p.cached(image, saKey); ok {
		return creds, nil
	}
	flight := image
	if token != "" {
		flight = joinKey(image, tokenHash, annotationsKey(annotations))
	}
	res, err, _ := p.group.Do(flight, func() (any, error) { return p.runner.run(ctx, image, token, annotations) })
	if err != nil {
		return nil, fmt.Errorf("failed to get credential from external registry credential provider: %w", err)
	}
	resp := res.(*response)
	if token != "" && p.sa.cacheType != kubeletconfigv1.TokenServiceAccountTokenCacheType {
		for _, a := range resp.Auth {
			if a.Password == token {
				return nil, errors.New("credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'")
			}
		}
	}
	var base string
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType:
		base = image
	case credentialproviderv1.RegistryPluginCacheKeyType:
		base = registryOf(image)
	case credentialproviderv1.GlobalPluginCacheKeyType:
		base = globalCacheKey
	default:
		return nil, fmt.Errorf("credential provider plugin did not return a valid cacheKeyType: %s", resp.CacheKeyType)
	}
	creds := make(DockerConfig, len(resp.Auth))
	for match, a := range resp.Auth {
		creds[match] = DockerConfigEntry{Username: a.Username, Password: a.Password}
	}
	ttl := p.defaultCacheDuration
	if resp.CacheDuration != nil {
		ttl = resp.CacheDuration.Duration
	}
	if ttl > 0 {
		p.mu.Lock()
		p.cache[joinKey(base, saKey)] = cacheEntry{creds: creds, expires: p.clock.Now().Add(ttl)}
		p.mu.Unlock()
	}
	return creds, nil
}

// matches: one of matchImages matches the repository.
func (p *plugin) matches(image string) bool {
	for _, m := range p.matchImages {
		if URLsMatch(m, image) {
			return true
		}
	}
	return false
}

// cached looks the credentials up by image, then registry, then the global
// key, each with the service account's key, as upstream.
func (p *plugin) cached(image, saKey string) (DockerConfig, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if now.Sub(p.lastPurge) > cachePurgeEvery {
		for k, e := range p.cache {
			if now.After(e.expires) {
				delete(p.cache, k)
			}
		}
		p.lastPurge = now
	}
	for _, base := range []string{image, registryOf(image), globalCacheKey} {
		k := joinKey(base, saKey)
		e, ok := p.cache[k]
		if !ok {
			continue
		}
		if now.After(e.expires) {
			delete(p.cache, k)
			continue
		}
		return e.creds, true
	}
	return nil, false
}

// accountData returns the service account's UID and the annotations the
// plugin asked for (all required ones must be there).
func (s *saMode) accountData(ctx context.Context, namespace, name string) (types.UID, map[string]string, error) {
	sa, err := s.accounts.ServiceAccount(ctx, namespace, name)
	if err != nil {
		return "", nil, err
	}
	out := make(map[string]string, len(s.required)+len(s.optional))
	for _, k := range s.required {
		v, ok := sa.Annotations[k]
		if !ok {
			return "", nil, fmt.Errorf("%w: %s", errRequiredAnnotation, k)
		}
		out[k] = v
	}
	for _, k := range s.optional {
		if v, ok := sa.Annotations[k]; ok {
			out[k] = v
		}
	}
	return sa.UID, out, nil
}

// token asks for a token of the pod's service account with the plugin's
// audience, bound to the pod, with the API server's default lifetime.
func (s *saMode) token(ctx context.Context, pod PodInfo, uid types.UID) (string, error) {
	return s.accounts.Token(ctx, pod.Namespace, pod.ServiceAccountName, &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: uid},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{s.audience},
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
}

// registryOf is the first component of a repository (the registry host).
func registryOf(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}

// joinKey joins parts unambiguously (each quoted).
func joinKey(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Quote(p))
	}
	return b.String()
}

func annotationsKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, k, m[k])
	}
	return joinKey(parts...)
}

// execPlugin runs the plugin binary: the request on stdin, the response
// on stdout, the configured arguments, and its environment on top of the
// kubelet's.
type execPlugin struct {
	name, path, apiVersion string
	args                   []string
	env                    []string
	timeout                time.Duration
	metrics                *Metrics
}

func (e *execPlugin) run(ctx context.Context, image, token string, annotations map[string]string) (*response, error) {
	klog.V(5).InfoS("Getting image credentials from external exec plugin", "pluginName", e.name, "image", image)
	req := credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: e.apiVersion, Kind: requestKind},
		Image:    image, ServiceAccountToken: token, ServiceAccountAnnotations: annotations,
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("failed to encode auth request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, e.path, e.args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	cmd.Env = append(os.Environ(), e.env...)
	start := time.Now()
	err = cmd.Run()
	e.metrics.observe(e.name, time.Since(start), err != nil || ctx.Err() != nil)
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("error execing credential provider plugin %s for image %s: %w: %s", e.name, image, ctx.Err(), stderr.String())
	case err != nil:
		return nil, fmt.Errorf("error execing credential provider plugin %s for image %s: %w: %s", e.name, image, err, stderr.String())
	}
	return decodeResponse(stdout.Bytes(), e.apiVersion)
}

// decodeResponse checks and decodes a plugin's stdout: the apiVersion
// asked for, the response kind, no unknown fields. Decoding errors do not
// quote the data, which holds credentials.
func decodeResponse(data []byte, apiVersion string) (*response, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, errors.New("error reading GVK from response")
	}
	if tm.APIVersion != apiVersion {
		return nil, fmt.Errorf("apiVersion from credential plugin response did not match expected apiVersion:%s, actual apiVersion:%s", apiVersion, tm.APIVersion)
	}
	if tm.Kind != responseKind {
		return nil, fmt.Errorf("failed to decode CredentialProviderResponse, unexpected Kind: %q", tm.Kind)
	}
	var resp response
	strict, err := sigsjson.UnmarshalStrict(data, &resp)
	if err != nil || len(strict) > 0 {
		return nil, errors.New("error decoding credential provider plugin response from stdout")
	}
	return &resp, nil
}
