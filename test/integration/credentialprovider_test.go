//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/test/integration/framework"
)

// credentialPluginSetup writes a CredentialProviderConfig for the test
// plugin (test/plugins/credential-provider) named test-plugin, matching
// registry, with args, and returns the kubelet flags for it and the log
// the plugin appends each request to.
func credentialPluginSetup(t *testing.T, registry string, args ...string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(framework.BuildBinary(t, "./test/plugins/credential-provider"), filepath.Join(binDir, "test-plugin")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "requests.log")
	args = append(args, "--log", log)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	cfg := filepath.Join(dir, "credential-providers.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: test-plugin
  matchImages: [%q]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [%s]
`, registry, strings.Join(quoted, ", "))), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--image-credential-provider-config", cfg, "--image-credential-provider-bin-dir", binDir}, log
}

// pluginRuns is how many requests the test plugin logged.
func pluginRuns(t *testing.T, log string) int {
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

func pullPod(name, image string, containers int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n", name)
	for i := 0; i < containers; i++ {
		fmt.Fprintf(&b, "  - name: c%d\n    image: %s\n    imagePullPolicy: Always\n    command: [\"sleep\", \"3600\"]\n", i, image)
	}
	return b.String()
}

func allRunning(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

func pullFailing(p *v1.Pod) bool {
	r, _ := waitingReason(p, "c0")
	return r == "ErrImagePull" || r == "ImagePullBackOff"
}

// An image on a registry that requires basic auth: without a credential
// provider plugin the pull fails (401); with one handing out the
// credentials it succeeds, and the plugin's answer is cached for its
// cacheDuration (three pulls, one run); the plugin's metrics are served. A
// failing plugin is named in the pull error, and the node's own
// credentials still pull (standalone has no pull secrets; the e2e test
// falls back to one).
func TestCredentialProviderPlugin(t *testing.T) {
	registry, authorized := framework.PrivateRegistry(t, "plug", "pa55")
	image := registry + "/pulltest:1"

	t.Run("without the plugin the pull fails", func(t *testing.T) {
		k := framework.NewKubelet(t)
		k.WriteManifest("anon.yaml", pullPod("anon", image, 1))
		k.Start()
		p := k.WaitForPod("anon", podTimeout, "failing to pull", pullFailing)
		// containerd 1.6 quotes the registry's 401, 2.x says it had no credentials.
		if _, msg := waitingReason(p, "c0"); !strings.Contains(msg, "401") && !strings.Contains(msg, "no basic auth credentials") {
			t.Errorf("waiting message %q, want the registry's refusal", msg)
		}
	})

	t.Run("the plugin's credentials pull it, cached", func(t *testing.T) {
		flags, log := credentialPluginSetup(t, registry, "--username", "plug", "--password", "pa55", "--cache-duration", "1h")
		k := framework.NewKubelet(t)
		k.ExtraArgs = append(k.ExtraArgs, flags...)
		k.WriteManifest("first.yaml", pullPod("first", image, 2))
		k.Start()
		k.WaitForPod("first", podTimeout, "running", allRunning)
		if authorized.Load() == 0 {
			t.Fatal("the registry let no request through")
		}
		k.WriteManifest("second.yaml", pullPod("second", image, 1))
		k.WaitForPod("second", podTimeout, "running", allRunning)
		if n := pluginRuns(t, log); n != 1 {
			t.Errorf("plugin ran %d times for three pulls within its cacheDuration, want 1", n)
		}
		_, body := apiGet(t, k, "/metrics")
		for _, want := range []string{
			`kubelet_credential_provider_plugin_duration_count{plugin_name="test-plugin"} 1`,
			`kubelet_credential_provider_config_info{hash="sha256:`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})

	t.Run("a failing plugin: a clear pull error, then the node's credentials", func(t *testing.T) {
		flags, log := credentialPluginSetup(t, registry, "--fail")
		k := framework.NewKubelet(t)
		k.ExtraArgs = append(k.ExtraArgs, flags...)
		k.WriteManifest("broken.yaml", pullPod("broken", image, 1))
		k.Start()
		p := k.WaitForPod("broken", podTimeout, "failing to pull", pullFailing)
		if _, msg := waitingReason(p, "c0"); !strings.Contains(msg, ` (credential provider plugin "test-plugin": failed to get credential from external registry credential provider: `) ||
			!strings.Contains(msg, "test plugin told to fail") {
			t.Errorf("waiting message %q does not name the failed plugin", msg)
		}
		framework.Eventually(t, 10*time.Second, 100*time.Millisecond, "the plugin's failure in the log", func() (bool, error) {
			return logHas(k, `"Failed to provide credentials for image"`) &&
				logHas(k, `failed to get credential from external registry credential provider: error execing credential provider plugin test-plugin for image `+registry+`/pulltest: exit status 1: test plugin told to fail for `), nil
		})
		if pluginRuns(t, log) == 0 {
			t.Error("the plugin never ran")
		}
	})

	t.Run("a failing plugin: the node's credentials still pull", func(t *testing.T) {
		flags, log := credentialPluginSetup(t, registry, "--fail")
		k := framework.NewKubelet(t)
		k.ExtraArgs = append(k.ExtraArgs, flags...)
		// The node's docker config, <root-dir>/config.json (read every 5 minutes).
		cfg := fmt.Sprintf(`{"auths":{%q:{"username":"plug","password":"pa55"}}}`, registry)
		if err := os.MkdirAll(k.RootDir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(k.RootDir, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		k.WriteManifest("fallback.yaml", pullPod("fallback", image, 1))
		k.Start()
		k.WaitForPod("fallback", podTimeout, "running on the node's credentials", allRunning)
		if pluginRuns(t, log) == 0 {
			t.Error("the plugin never ran")
		}
	})
}
