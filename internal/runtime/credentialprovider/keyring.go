package credentialprovider

import (
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

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// DockerConfig maps registry locations ("quay.io", "https://index.docker.io/v1/",
// "*.example.com:5000/team") to credentials.
type DockerConfig map[string]DockerConfigEntry

// DockerConfigEntry is one entry of a .dockercfg or of config.json's "auths".
type DockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// ParseDockerConfigJSON reads a config.json document ({"auths": {...}}), the
// kubernetes.io/dockerconfigjson secret format.
func ParseDockerConfigJSON(data []byte) (DockerConfig, error) {
	var doc struct {
		Auths DockerConfig `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc.Auths, nil
}

// ParseDockercfg reads a legacy .dockercfg document (the locations at the
// top level), the kubernetes.io/dockercfg secret format.
func ParseDockercfg(data []byte) (DockerConfig, error) {
	var cfg DockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

var errAuthField = errors.New("auth field must be base64(username:password)")

// AuthConfig turns an entry into CRI credentials. A non-empty auth field wins
// over username and password; it may be padded base64 or not, and is passed
// on re-encoded in padded form, which every runtime decodes.
func (e DockerConfigEntry) AuthConfig() (*runtimeapi.AuthConfig, error) {
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

// Keyring indexes credentials by normalised registry location, as upstream's
// keyring does: keys are scheme-less "host[:port][/path]" and are kept in
// reverse lexical order, so a longer path under the same host comes first.
type Keyring struct {
	keys  []string
	creds map[string][]*runtimeapi.AuthConfig
}

// Add indexes one secret's entries. An entry that does not parse makes the
// whole secret unusable, as in upstream (where it fails the pull).
func (k *Keyring) Add(cfg DockerConfig) error {
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
		auth, err := cfg[loc].AuthConfig()
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

// Lookup returns the credentials whose key matches repo (a normalised
// repository, see Repository), most specific key first. When none match and
// repo is on Docker Hub, the credentials under index.docker.io apply.
func (k *Keyring) Lookup(repo string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, key := range k.keys {
		if URLsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		out = append(out, k.creds[dockerHubKey]...)
	}
	return out
}

// URLsMatch reports whether the glob (a keyring key or a plugin's
// matchImages entry) matches the repository, as upstream's URLsMatchStr:
// the same port, the same number of host labels, each label matching the
// glob's (which may hold globs such as "*"), and the glob's path a string
// prefix of the repository's path.
func URLsMatch(glob, repo string) bool {
	k, err := parseSchemeless(glob)
	if err != nil {
		return false
	}
	r, err := parseSchemeless(repo)
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

// parseSchemeless parses a location without a scheme ("host[:port][/path]").
func parseSchemeless(s string) (*url.URL, error) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return nil, err
	}
	u.Scheme = ""
	return u, nil
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
