package credentialprovider

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The API versions of the configuration file (kubelet.config.k8s.io) and
// of the plugin protocol (credentialprovider.kubelet.k8s.io) upstream
// accepts. Service account tokens need v1 of both.
var (
	configAPIVersions = []string{"kubelet.config.k8s.io/v1alpha1", "kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1"}
	pluginAPIVersions = []string{"credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1", "credentialprovider.kubelet.k8s.io/v1"}
)

const (
	configV1   = "kubelet.config.k8s.io/v1"
	pluginV1   = "credentialprovider.kubelet.k8s.io/v1"
	configKind = "CredentialProviderConfig"
)

// ReadConfig reads the --image-credential-provider-config path: one file, or
// a directory whose *.json, *.yaml and *.yml files are read in lexical
// order and merged (a provider name may appear once), as upstream. It
// returns the providers and upstream's configuration hash
// ("sha256:<hex>" over each file's length and content).
func ReadConfig(path string) ([]kubeletconfigv1.CredentialProvider, string, error) {
	if path == "" {
		return nil, "", fmt.Errorf("credential provider config path is empty")
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("unable to access path %q: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, "", fmt.Errorf("unable to read directory %q: %w", path, err)
		}
		files = nil
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".json", ".yaml", ".yml":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, "", fmt.Errorf("no configuration files found in directory %q", path)
		}
	}
	hash := sha256.New()
	var providers []kubeletconfigv1.CredentialProvider
	names := sets.New[string]()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, "", fmt.Errorf("unable to read file %q: %w", f, err)
		}
		// The length first, so that files cannot be cut differently
		// to the same hash.
		_ = binary.Write(hash, binary.BigEndian, uint64(len(data)))
		hash.Write(data)
		cfg, err := decodeConfig(data)
		if err != nil {
			return nil, "", fmt.Errorf("error decoding config %q: %w", f, err)
		}
		for _, p := range cfg.Providers {
			if names.Has(p.Name) {
				return nil, "", fmt.Errorf("duplicate provider name %q found in configuration file(s)", p.Name)
			}
			names.Insert(p.Name)
			providers = append(providers, p)
		}
	}
	return providers, fmt.Sprintf("sha256:%x", hash.Sum(nil)), nil
}

// decodeConfig decodes one CredentialProviderConfig (YAML or JSON)
// strictly: an unknown field is an error.
func decodeConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var cfg kubeletconfigv1.CredentialProviderConfig
	strict, err := sigsjson.UnmarshalStrict(js, &cfg)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("strict decoding error: %w", errors.Join(strict...))
	}
	if cfg.Kind != configKind {
		return nil, fmt.Errorf("failed to decode %q (wrong Kind)", cfg.Kind)
	}
	if !slices.Contains(configAPIVersions, cfg.APIVersion) {
		return nil, fmt.Errorf("failed to decode CredentialProviderConfig, unexpected apiVersion: %q", cfg.APIVersion)
	}
	if cfg.APIVersion != configV1 {
		for i, p := range cfg.Providers {
			if p.TokenAttributes != nil {
				// Only v1 has the field.
				return nil, fmt.Errorf(`strict decoding error: unknown field "providers[%d].tokenAttributes"`, i)
			}
		}
	}
	return &cfg, nil
}

// ValidateConfig checks the providers as upstream's
// validateCredentialProviderConfig does (the service account token
// feature is on, as upstream's default since v1.34).
func ValidateConfig(providers []kubeletconfigv1.CredentialProvider) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("providers")
	if len(providers) == 0 {
		errs = append(errs, field.Required(path, "at least 1 item in plugins is required"))
	}
	seen := sets.New[string]()
	for _, p := range providers {
		switch {
		case strings.Contains(p.Name, "/"):
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, "provider name cannot contain '/'"))
		case strings.Contains(p.Name, " "):
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, "provider name cannot contain spaces"))
		case p.Name == ".":
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, "provider name cannot be '.'"))
		case p.Name == "..":
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, "provider name cannot be '..'"))
		}
		if seen.Has(p.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
		}
		seen.Insert(p.Name)
		if p.APIVersion == "" {
			errs = append(errs, field.Required(path.Child("apiVersion"), ""))
		} else if !slices.Contains(pluginAPIVersions, p.APIVersion) {
			errs = append(errs, field.NotSupported(path.Child("apiVersion"), p.APIVersion, pluginAPIVersions))
		}
		if len(p.MatchImages) == 0 {
			errs = append(errs, field.Required(path.Child("matchImages"), "at least 1 item in matchImages is required"))
		}
		for _, m := range p.MatchImages {
			if _, err := parseSchemeless(m); err != nil {
				errs = append(errs, field.Invalid(path.Child("matchImages"), m, fmt.Sprintf("match image is invalid: %s", err.Error())))
			}
		}
		if p.DefaultCacheDuration == nil {
			errs = append(errs, field.Required(path.Child("defaultCacheDuration"), ""))
		} else if p.DefaultCacheDuration.Duration < 0 {
			errs = append(errs, field.Invalid(path.Child("defaultCacheDuration"), p.DefaultCacheDuration, "must be greater than or equal to 0"))
		}
		if p.TokenAttributes != nil {
			errs = append(errs, validateTokenAttributes(path.Child("tokenAttributes"), p)...)
		}
	}
	return errs
}

var cacheTypes = []string{
	string(kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType),
	string(kubeletconfigv1.TokenServiceAccountTokenCacheType),
}

func validateTokenAttributes(path *field.Path, p kubeletconfigv1.CredentialProvider) field.ErrorList {
	var errs field.ErrorList
	ta := p.TokenAttributes
	if ta.ServiceAccountTokenAudience == "" {
		errs = append(errs, field.Required(path.Child("serviceAccountTokenAudience"), ""))
	}
	if ta.RequireServiceAccount == nil {
		errs = append(errs, field.Required(path.Child("requireServiceAccount"), ""))
	}
	if p.APIVersion != pluginV1 {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("tokenAttributes is only supported for %s API version", pluginV1)))
	}
	if ta.RequireServiceAccount != nil && !*ta.RequireServiceAccount && len(ta.RequiredServiceAccountAnnotationKeys) > 0 {
		errs = append(errs, field.Forbidden(path.Child("requiredServiceAccountAnnotationKeys"), "requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"))
	}
	errs = append(errs, validateAnnotationKeys(path.Child("requiredServiceAccountAnnotationKeys"), ta.RequiredServiceAccountAnnotationKeys)...)
	errs = append(errs, validateAnnotationKeys(path.Child("optionalServiceAccountAnnotationKeys"), ta.OptionalServiceAccountAnnotationKeys)...)
	both := sets.New(ta.RequiredServiceAccountAnnotationKeys...).Intersection(sets.New(ta.OptionalServiceAccountAnnotationKeys...))
	if both.Len() > 0 {
		errs = append(errs, field.Invalid(path, sets.List(both), "annotation keys cannot be both required and optional"))
	}
	switch {
	case ta.CacheType == "":
		errs = append(errs, field.Required(path.Child("cacheType"),
			fmt.Sprintf("cacheType is required to be set when tokenAttributes is specified. Supported values are: %s", strings.Join(cacheTypes, ", "))))
	case !slices.Contains(cacheTypes, string(ta.CacheType)):
		errs = append(errs, field.NotSupported(path.Child("cacheType"), ta.CacheType, cacheTypes))
	}
	return errs
}

// validateAnnotationKeys: qualified names (case does not matter), unique.
func validateAnnotationKeys(path *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(path, k, msg))
		}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(path, k))
		}
		seen.Insert(k)
	}
	return errs
}
