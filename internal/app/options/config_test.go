package options

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigRejects(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    []string // substrings of the error
	}{
		{"typo in top-level field", header + "maxPod: 20\n", []string{`unknown field "maxPod"`, `did you mean "maxPods"`}},
		{"wrong case is a typo", header + "MaxPods: 20\n", []string{`unknown field "MaxPods"`}},
		{"typo in nested field", header + "authentication:\n  webhok: {}\n", []string{`unknown field "authentication.webhok"`}},
		{"string for integer", header + "maxPods: \"twenty\"\n", []string{"field maxPods", "expected an integer (int32)", "got string"}},
		{"number for duration", header + "syncFrequency: 10\n", []string{"field syncFrequency", "expected a duration string"}},
		{"unparsable duration", header + "syncFrequency: 10x\n", []string{"field syncFrequency", `unknown unit "x"`}},
		{"number for nested duration", header + "authentication:\n  webhook:\n    cacheTTL: 5\n", []string{"field authentication.webhook.cacheTTL", "expected a duration string"}},
		{"list for map", header + "evictionHard: [a]\n", []string{"field evictionHard", "expected an object (map)", "got array"}},
		{"string for boolean", header + "failSwapOn: \"nope\"\n", []string{"field failSwapOn", "expected a boolean"}},
		{"duplicate field in YAML", header + "port: 1\nport: 2\n", []string{"duplicate field", `"port"`}},
		{"duplicate field in JSON", `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","port":1,"port":2}`, []string{"duplicate field", `"port"`}},
		{"wrong apiVersion", "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", []string{`apiVersion is "kubelet.config.k8s.io/v1", must be "kubelet.config.k8s.io/v1beta1"`}},
		{"missing apiVersion and kind", "port: 1\n", []string{`apiVersion is ""`, `kind is "", must be "KubeletConfiguration"`}},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n", []string{`kind is "KubeProxyConfiguration"`}},
		{"empty file", "  \n", []string{"the file is empty"}},
		{"not an object", "- a\n- b\n", []string{"must be a YAML or JSON object"}},
		{"not YAML", header + "port: [1\n", []string{"not valid YAML or JSON"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "kubelet.yaml", tc.content)
			_, err := LoadConfig(path)
			if err == nil {
				t.Fatal("LoadConfig succeeded, want error")
			}
			if !errors.Is(err, ErrInvalidConfigFile) {
				t.Errorf("error %q does not wrap ErrInvalidConfigFile", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadConfigAccepts(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
	}{
		{"yaml", "kubelet.yaml", header + "maxPods: 42\nsyncFrequency: 30s\nstaticPodPath: /etc/kubernetes/manifests\nevictionHard:\n  memory.available: 200Mi\n"},
		{"json", "kubelet.json", `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":42,"syncFrequency":"30s","staticPodPath":"/etc/kubernetes/manifests","evictionHard":{"memory.available":"200Mi"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(writeFile(t, t.TempDir(), tc.file, tc.content))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MaxPods != 42 || cfg.SyncFrequency.Duration != 30*time.Second ||
				cfg.StaticPodPath != "/etc/kubernetes/manifests" || cfg.EvictionHard["memory.available"] != "200Mi" {
				t.Errorf("unexpected config: maxPods=%d sync=%s staticPodPath=%q evictionHard=%v",
					cfg.MaxPods, cfg.SyncFrequency.Duration, cfg.StaticPodPath, cfg.EvictionHard)
			}
			if cfg.Port != 0 {
				t.Errorf("LoadConfig applied defaults: port=%d", cfg.Port)
			}
		})
	}
}

func TestLoadConfigResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "sub/kubelet.yaml", header+
		"staticPodPath: manifests\ntlsCertFile: /abs/cert.pem\nresolvConf: resolv.conf\nauthentication:\n  x509:\n    clientCAFile: ca.crt\n")
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "sub")
	for name, got := range map[string]string{
		"staticPodPath": cfg.StaticPodPath, "clientCAFile": cfg.Authentication.X509.ClientCAFile, "resolvConf": *cfg.ResolverConfig,
	} {
		if !strings.HasPrefix(got, base+string(filepath.Separator)) {
			t.Errorf("%s = %q, want it under %q", name, got, base)
		}
	}
	if cfg.TLSCertFile != "/abs/cert.pem" {
		t.Errorf("absolute tlsCertFile changed to %q", cfg.TLSCertFile)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestMergeDropIns(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "10-pods.conf", header+"maxPods: 50\nevictionHard:\n  memory.available: 300Mi\n")
	writeFile(t, dir, "20-pods.conf", header+"maxPods: 60\n")
	writeFile(t, dir, "nested/30-port.conf", header+"port: 11250\n")
	writeFile(t, dir, "ignored.yaml", header+"maxPods: 999\n")
	base, err := LoadConfig(writeFile(t, t.TempDir(), "kubelet.yaml", header+"maxPods: 10\nclusterDomain: cluster.local\n"))
	if err != nil {
		t.Fatal(err)
	}
	SetDefaults(base)
	got, err := MergeDropIns(base, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxPods != 60 {
		t.Errorf("maxPods = %d, want 60 (last drop-in wins, .yaml ignored)", got.MaxPods)
	}
	if got.Port != 11250 {
		t.Errorf("port = %d, want 11250 from a nested drop-in", got.Port)
	}
	if got.ClusterDomain != "cluster.local" {
		t.Errorf("clusterDomain = %q, want base value kept", got.ClusterDomain)
	}
	if got.EvictionHard["memory.available"] != "300Mi" || got.EvictionHard["nodefs.available"] != "10%" {
		t.Errorf("evictionHard = %v, want maps merged key by key", got.EvictionHard)
	}
	if base.MaxPods != 10 {
		t.Errorf("base modified: maxPods = %d", base.MaxPods)
	}

	writeFile(t, dir, "40-bad.conf", header+"maxPodz: 1\n")
	if _, err := MergeDropIns(base, dir); err == nil || !strings.Contains(err.Error(), `unknown field "maxPodz"`) {
		t.Errorf("bad drop-in: err = %v, want unknown field error", err)
	}
}
