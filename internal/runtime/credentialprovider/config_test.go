package credentialprovider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const validConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: test
  matchImages: ["registry.io/foobar", "*.registry.io:5000"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--v=5"]
  env:
  - {name: FOO, value: bar}
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadConfig(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a.yaml": validConfig,
		"b.json": `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"CredentialProviderConfig","providers":[{"name":"other","matchImages":["quay.io"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1"}]}`,
		"c.txt":  "ignored: not a config file",
	})
	providers, hash, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(providers) != 2 || providers[0].Name != "test" || providers[1].Name != "other" || !strings.HasPrefix(hash, "sha256:") {
		t.Fatalf("providers %+v hash %q", providers, hash)
	}
	p := providers[0]
	if p.DefaultCacheDuration.Duration.String() != "10m0s" || p.Args[0] != "--v=5" || p.Env[0].Value != "bar" || len(p.MatchImages) != 2 {
		t.Errorf("provider %+v", p)
	}
	if errs := ValidateConfig(providers); len(errs) > 0 {
		t.Errorf("valid config: %v", errs)
	}
	single, hash2, err := ReadConfig(filepath.Join(dir, "a.yaml"))
	if err != nil || len(single) != 1 || hash2 == hash {
		t.Errorf("one file: %v %q %v", single, hash2, err)
	}

	for _, tc := range []struct {
		name, data, want string
	}{
		{"unknown field", strings.Replace(validConfig, "args:", "argz:", 1), `unknown field "providers[0].argz"`},
		{"wrong kind", strings.Replace(validConfig, "kind: CredentialProviderConfig", "kind: KubeletConfiguration", 1), "wrong Kind"},
		{"wrong apiVersion", strings.Replace(validConfig, "kubelet.config.k8s.io/v1\n", "kubelet.config.k8s.io/v2\n", 1), "unexpected apiVersion"},
		{"tokenAttributes before v1", strings.Replace(validConfig, "kubelet.config.k8s.io/v1\n", "kubelet.config.k8s.io/v1beta1\n", 1) +
			"  tokenAttributes: {serviceAccountTokenAudience: a, requireServiceAccount: true, cacheType: Token}\n", `unknown field "providers[0].tokenAttributes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := writeFiles(t, map[string]string{"c.yaml": tc.data})
			if _, _, err := ReadConfig(d); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	dup := writeFiles(t, map[string]string{"a.yaml": validConfig, "b.yaml": validConfig})
	if _, _, err := ReadConfig(dup); err == nil || !strings.Contains(err.Error(), `duplicate provider name "test"`) {
		t.Errorf("duplicate: %v", err)
	}
	if _, _, err := ReadConfig(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no configuration files found") {
		t.Errorf("empty dir: %v", err)
	}
}

// Upstream's validation (TestValidateCredentialProviderConfig's cases).
func TestValidateConfig(t *testing.T) {
	base := func(extra string) string {
		return `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: foobar
  matchImages: ["foobar.registry.io"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
` + extra
	}
	token := func(attrs string) string { return base("  tokenAttributes: {" + attrs + "}\n") }
	for _, tc := range []struct {
		name, data string
		want       []string // substrings; nil means valid
	}{
		{"valid", base(""), nil},
		{"no providers", "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n", []string{"providers: Required value: at least 1 item in plugins is required"}},
		{"name with slash", strings.Replace(base(""), "name: foobar", "name: foo/bar", 1), []string{"provider name cannot contain '/'"}},
		{"name with space", strings.Replace(base(""), "name: foobar", "name: 'foo bar'", 1), []string{"provider name cannot contain spaces"}},
		{"name is dot", strings.Replace(base(""), "name: foobar", "name: '.'", 1), []string{"provider name cannot be '.'"}},
		{"no apiVersion", strings.Replace(base(""), "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n", "", 1), []string{"providers.apiVersion: Required value"}},
		{"bad apiVersion", strings.Replace(base(""), "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v2", 1), []string{"Unsupported value"}},
		{"no matchImages", strings.Replace(base(""), `["foobar.registry.io"]`, `[]`, 1), []string{"at least 1 item in matchImages is required"}},
		{"bad matchImage", strings.Replace(base(""), `["foobar.registry.io"]`, `["%invalid%"]`, 1), []string{"match image is invalid"}},
		{"no defaultCacheDuration", strings.Replace(base(""), "  defaultCacheDuration: 1m\n", "", 1), []string{"providers.defaultCacheDuration: Required value"}},
		{"negative defaultCacheDuration", strings.Replace(base(""), "1m", "-1m", 1), []string{"must be greater than or equal to 0"}},
		{"token mode valid", token("serviceAccountTokenAudience: aud, requireServiceAccount: true, cacheType: ServiceAccount, requiredServiceAccountAnnotationKeys: [example.com/role]"), nil},
		{"token mode needs an audience, requireServiceAccount and a cacheType", token("cacheType: ''"),
			[]string{"serviceAccountTokenAudience: Required value", "requireServiceAccount: Required value", "cacheType: Required value"}},
		{"token mode bad cacheType", token("serviceAccountTokenAudience: a, requireServiceAccount: true, cacheType: Pod"), []string{`cacheType: Unsupported value: "Pod"`}},
		{"token mode only for v1 plugins", strings.Replace(token("serviceAccountTokenAudience: a, requireServiceAccount: true, cacheType: Token"),
			"credentialprovider.kubelet.k8s.io/v1\n", "credentialprovider.kubelet.k8s.io/v1beta1\n", 1), []string{"tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version"}},
		{"required annotations need requireServiceAccount", token("serviceAccountTokenAudience: a, requireServiceAccount: false, cacheType: Token, requiredServiceAccountAnnotationKeys: [a.com/b]"),
			[]string{"requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"}},
		{"annotation both required and optional", token("serviceAccountTokenAudience: a, requireServiceAccount: true, cacheType: Token, requiredServiceAccountAnnotationKeys: [a.com/b], optionalServiceAccountAnnotationKeys: [a.com/b]"),
			[]string{"annotation keys cannot be both required and optional"}},
		{"bad annotation key", token("serviceAccountTokenAudience: a, requireServiceAccount: true, cacheType: Token, optionalServiceAccountAnnotationKeys: ['-bad-']"),
			[]string{"optionalServiceAccountAnnotationKeys: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := decodeConfig([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			errs := ValidateConfig(cfg.Providers)
			if tc.want == nil {
				if len(errs) > 0 {
					t.Errorf("unexpected errors: %v", errs)
				}
				return
			}
			got := errs.ToAggregate()
			for _, w := range tc.want {
				if got == nil || !strings.Contains(got.Error(), w) {
					t.Errorf("errors %v, want %q", got, w)
				}
			}
		})
	}
}
