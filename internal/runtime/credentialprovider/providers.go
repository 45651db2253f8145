package credentialprovider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seed-kubelet/kubelet/internal/runtime/imageref"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config configures the credential provider plugins.
type Config struct {
	// ConfigPath is --image-credential-provider-config (a file or a
	// directory of them) and BinDir --image-credential-provider-bin-dir.
	// Both required.
	ConfigPath, BinDir string
	// ServiceAccounts serves plugins in service account token mode; nil
	// in standalone mode, where such a plugin fails for pods with a
	// service account (there is no API server to ask).
	ServiceAccounts ServiceAccounts
	// Clock times the cache; nil means the real clock.
	Clock clock.Clock
	// Timeout bounds one plugin run; 0 means DefaultPluginTimeout.
	Timeout time.Duration
}

// Plugins are the configured credential provider plugins, in the order
// of the configuration.
type Plugins struct {
	plugins []*plugin
	metrics *Metrics
}

// New reads and validates the configuration and finds each plugin's
// binary, as upstream's RegisterCredentialProviderPlugins: any problem
// stops the kubelet.
func New(cfg Config) (*Plugins, error) {
	if _, err := os.Stat(cfg.BinDir); err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("plugin binary directory %s did not exist", cfg.BinDir)
		}
		return nil, fmt.Errorf("error inspecting binary directory %s: %w", cfg.BinDir, err)
	}
	providers, hash, err := ReadConfig(cfg.ConfigPath)
	if err != nil {
		return nil, err
	}
	if errs := ValidateConfig(providers); len(errs) > 0 {
		return nil, fmt.Errorf("failed to validate credential provider config: %v", errs.ToAggregate())
	}
	clk, timeout := cfg.Clock, cfg.Timeout
	if clk == nil {
		clk = clock.RealClock{}
	}
	if timeout == 0 {
		timeout = DefaultPluginTimeout
	}
	m := newMetrics(hash)
	out := &Plugins{metrics: m}
	for _, pc := range providers {
		bin, err := exec.LookPath(filepath.Join(cfg.BinDir, pc.Name))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
				return nil, fmt.Errorf("plugin binary executable %s did not exist", filepath.Join(cfg.BinDir, pc.Name))
			}
			return nil, fmt.Errorf("error inspecting binary executable %s: %w", bin, err)
		}
		env := make([]string, 0, len(pc.Env))
		for _, e := range pc.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		p := &plugin{
			name: pc.Name, matchImages: pc.MatchImages, defaultCacheDuration: pc.DefaultCacheDuration.Duration, clock: clk,
			runner: &execPlugin{name: pc.Name, path: bin, apiVersion: pc.APIVersion, args: pc.Args, env: env, timeout: timeout, metrics: m},
			cache:  map[string]cacheEntry{}, lastPurge: clk.Now(),
		}
		if ta := pc.TokenAttributes; ta != nil {
			p.sa = &saMode{
				audience: ta.ServiceAccountTokenAudience, requireServiceAccount: *ta.RequireServiceAccount,
				required: ta.RequiredServiceAccountAnnotationKeys, optional: ta.OptionalServiceAccountAnnotationKeys,
				cacheType: ta.CacheType, accounts: cfg.ServiceAccounts,
			}
			if p.sa.accounts == nil {
				p.sa.accounts = standaloneAccounts{}
			}
		}
		out.plugins = append(out.plugins, p)
		klog.V(2).InfoS("Registered credential provider", "provider", pc.Name, "matchImages", pc.MatchImages, "serviceAccountTokens", p.sa != nil)
	}
	return out, nil
}

// Lookup returns the credentials the plugins give for repo (a repository
// as Repository normalises it) pulled for pod, most specific match
// first, as a keyring of all their answers would. A plugin that fails
// (exits non-zero, times out, answers wrongly) is logged and left out;
// the error names it so that a pull that fails without it can say why.
func (ps *Plugins) Lookup(ctx context.Context, pod PodInfo, repo string) ([]*runtimeapi.AuthConfig, error) {
	var ring Keyring
	var errs []error
	for _, p := range ps.plugins {
		creds, err := p.provide(ctx, repo, pod)
		if err != nil {
			klog.ErrorS(err, "Failed to provide credentials for image", "provider", p.name, "image", repo,
				"pod", klog.KRef(pod.Namespace, pod.Name), "podUID", pod.UID)
			errs = append(errs, fmt.Errorf("credential provider plugin %q: %w", p.name, err))
			continue
		}
		if err := ring.Add(creds); err != nil {
			errs = append(errs, fmt.Errorf("credential provider plugin %q: %w", p.name, err))
		}
	}
	return ring.Lookup(repo), errors.Join(errs...)
}

// Collectors are the plugins' metrics, for /metrics; none without plugins.
func (ps *Plugins) Collectors() []prometheus.Collector {
	if ps == nil {
		return nil
	}
	return ps.metrics.collectors()
}

// standaloneAccounts answers for a kubelet without an API server.
type standaloneAccounts struct{}

var errStandalone = errors.New("cannot get ServiceAccounts when kubelet is in standalone mode")

func (standaloneAccounts) ServiceAccount(context.Context, string, string) (*v1.ServiceAccount, error) {
	return nil, errStandalone
}

func (standaloneAccounts) Token(context.Context, string, string, *authenticationv1.TokenRequest) (string, error) {
	return "", errStandalone
}

// Sources are where a pull's credentials come from, tried in upstream's
// order: the pod's imagePullSecrets, the node's docker config, then the
// plugins.
type Sources struct {
	// PullSecrets reads the pod's imagePullSecrets; nil in standalone mode.
	PullSecrets func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig
	// Node is the node's docker config; may be nil.
	Node *NodeKeyring
	// Plugins are the credential provider plugins; nil without
	// --image-credential-provider-config.
	Plugins *Plugins
}

// Lookup returns every credential for image pulled for pod, in order; the
// error says which plugins failed (what they would have given is missing).
func (s Sources) Lookup(ctx context.Context, pod *v1.Pod, image string) ([]*runtimeapi.AuthConfig, error) {
	var out []*runtimeapi.AuthConfig
	if s.PullSecrets != nil {
		out = append(out, s.PullSecrets(ctx, pod, image)...)
	}
	repo := imageref.Repository(image)
	if s.Node != nil {
		out = append(out, s.Node.Lookup(repo)...)
	}
	if s.Plugins == nil {
		return out, nil
	}
	creds, err := s.Plugins.Lookup(ctx, PodInfoOf(pod), repo)
	return append(out, creds...), err
}
