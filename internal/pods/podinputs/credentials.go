package podinputs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/events"
)

// ReasonFailedToRetrieveImagePullSecret is upstream's event reason for pull
// secrets that could not be read.
const ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// SecretGetter reads a secret; a missing one is reported with an error for
// which apierrors.IsNotFound is true. Source and localobjects.Store have it.
type SecretGetter interface {
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Credentials returns the registry credentials in the pod's imagePullSecrets
// that apply to image, most specific match first; see PullSecretCredentials.
func (s *Source) Credentials(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	return PullSecretCredentials(ctx, s, s.recorder, pod, image)
}

// PullSecretCredentials returns the registry credentials in the pod's
// imagePullSecrets, read from secrets, that apply to image, most specific
// match first. Secrets that cannot be read are logged (and reported on the
// pod through recorder, when not nil) and skipped, as are malformed ones:
// the pull then goes ahead with what is left, or anonymously.
//
// ServerAddress is left empty, as upstream does: containerd drops an
// AuthConfig whose ServerAddress host differs from the host it pulls from
// (registry-1.docker.io for Docker Hub, a mirror, a glob's expansion).
func PullSecretCredentials(ctx context.Context, secrets SecretGetter, recorder events.Recorder, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	var ring keyring
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			// Old API validation let empty names through; upstream ignores them.
			continue
		}
		secret, err := secrets.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			klog.InfoS("Unable to retrieve pull secret, the image pull may not succeed.", "pod", klog.KObj(pod), "secret", klog.KRef(pod.Namespace, ref.Name), "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		cfg, ok, err := dockerConfigFromSecret(secret)
		if err == nil && ok {
			err = ring.add(cfg)
		}
		if err != nil {
			klog.ErrorS(err, "Ignoring malformed pull secret", "pod", klog.KObj(pod), "secret", klog.KObj(secret))
		}
	}
	if len(failed) > 0 && recorder != nil {
		recorder.Eventf(pod, v1.EventTypeWarning, ReasonFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return ring.lookup(repository(image))
}

// dockerConfig maps registry locations ("quay.io", "https://index.docker.io/v1/",
// "*.example.com:5000/team") to credentials.
type dockerConfig map[string]dockerConfigEntry

// dockerConfigEntry is one entry of a .dockercfg or of config.json's "auths".
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// dockerConfigFromSecret parses a kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg secret. ok is false for other types and for secrets
// without the type's key, which upstream ignores too.
func dockerConfigFromSecret(secret *v1.Secret) (cfg dockerConfig, ok bool, err error) {
	if data := secret.Data[v1.DockerConfigJsonKey]; secret.Type == v1.SecretTypeDockerConfigJson && len(data) > 0 {
		var doc struct {
			Auths dockerConfig `json:"auths"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, false, fmt.Errorf("parse %s: %w", v1.DockerConfigJsonKey, err)
		}
		return doc.Auths, true, nil
	}
	if data := secret.Data[v1.DockerConfigKey]; secret.Type == v1.SecretTypeDockercfg && len(data) > 0 {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, false, fmt.Errorf("parse %s: %w", v1.DockerConfigKey, err)
		}
		return cfg, true, nil
	}
	return nil, false, nil
}

var errAuthField = errors.New("auth field must be base64(username:password)")

// authConfig turns an entry into CRI credentials. A non-empty auth field wins
// over username and password; it may be padded base64 or not, and is passed
// on re-encoded in padded form, which every runtime decodes.
func (e dockerConfigEntry) authConfig() (*runtimeapi.AuthConfig, error) {
	out := &runtimeapi.AuthConfig{
		Username:      e.Username,
		Password:      e.Password,
		IdentityToken: e.IdentityToken,
		RegistryToken: e.RegistryToken,
	}
	if e.Auth == "" {
		return out, nil
	}
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(e.Auth), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(e.Auth)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthField, err)
	}
	user, pass, found := strings.Cut(string(decoded), ":")
	if !found {
		return nil, errAuthField
	}
	out.Username, out.Password = user, pass
	out.Auth = base64.StdEncoding.EncodeToString(decoded)
	return out, nil
}

// keyring indexes credentials by normalised registry location, as upstream's
// keyring does: keys are scheme-less "host[:port][/path]" and are kept in
// reverse lexical order, so a longer path under the same host comes first.
type keyring struct {
	keys  []string
	creds map[string][]*runtimeapi.AuthConfig
}

// add indexes one secret's entries. An entry that does not parse makes the
// whole secret unusable, as in upstream (where it fails the pull).
func (k *keyring) add(cfg dockerConfig) error {
	type keyed struct {
		key  string
		auth *runtimeapi.AuthConfig
	}
	var parsed []keyed
	for _, loc := range slices.Sorted(maps.Keys(cfg)) {
		key, err := keyringKey(loc)
		if err != nil {
			klog.ErrorS(err, "Ignoring invalid registry in pull secret", "registry", loc)
			continue
		}
		auth, err := cfg[loc].authConfig()
		if err != nil {
			return fmt.Errorf("registry %q: %w", loc, err)
		}
		parsed = append(parsed, keyed{key, auth})
	}
	if k.creds == nil {
		k.creds = map[string][]*runtimeapi.AuthConfig{}
	}
	for _, p := range parsed {
		if _, ok := k.creds[p.key]; !ok {
			k.keys = append(k.keys, p.key)
		}
		k.creds[p.key] = append(k.creds[p.key], p.auth)
	}
	slices.Sort(k.keys)
	slices.Reverse(k.keys)
	return nil
}

// keyringKey normalises a registry location: the scheme goes, a /v1/ or /v2/
// API prefix counts as the bare host, and any other path stays.
func keyringKey(loc string) (string, error) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil {
		return "", err
	}
	path := u.Path
	if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, nil
	}
	return u.Host + path, nil
}

// Docker Hub's credentials are conventionally stored under this key
// (from "https://index.docker.io/v1/").
const dockerHubKey = "index.docker.io"

// lookup returns the credentials whose key matches repo (a normalised
// repository, see repository), most specific key first. When none match and
// repo is on Docker Hub, the credentials under index.docker.io apply.
func (k *keyring) lookup(repo string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, key := range k.keys {
		if registryMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		out = append(out, k.creds[dockerHubKey]...)
	}
	return out
}

// registryMatch reports whether the keyring key matches the repository:
// the same port, the same number of host labels, each label matching the
// key's (which may be a glob such as "*"), and the key's path a string prefix
// of the repository's path.
func registryMatch(key, repo string) bool {
	k, err := url.Parse("https://" + key)
	if err != nil {
		return false
	}
	r, err := url.Parse("https://" + repo)
	if err != nil {
		return false
	}
	kLabels, kPort := hostLabels(k.Host)
	rLabels, rPort := hostLabels(r.Host)
	if kPort != rPort || len(kLabels) != len(rLabels) || !strings.HasPrefix(r.Path, k.Path) {
		return false
	}
	for i, pattern := range kLabels {
		if ok, err := filepath.Match(pattern, rLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func hostLabels(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub reports whether a repository is pulled from Docker Hub: no
// registry host (a first component without "." or ":"), or docker.io /
// index.docker.io.
func isDockerHub(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	switch {
	case first == "":
		return false
	case !found, first == "docker.io", first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// repository returns the image's repository in the fully qualified form the
// runtime resolves it to, without tag or digest: "busybox:1.36" becomes
// "docker.io/library/busybox", "quay.io/a/b@sha256:..." becomes "quay.io/a/b".
// The first component names a registry when it holds "." or ":", is
// "localhost", or has upper-case letters; otherwise the image is on Docker Hub.
func repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	domain, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost" && strings.ToLower(domain) == domain) {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain + "/" + rest
}

var _ SecretGetter = (*Source)(nil)
