package certificate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeTestKubeconfig writes a kubeconfig for server with the given
// credentials (embedded certificate/key, or a token).
func writeTestKubeconfig(t *testing.T, path, server string, ca []byte, certPEM, keyPEM []byte, token string) {
	t.Helper()
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {ClientCertificateData: certPEM, ClientKeyData: keyPEM, Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{"ctx": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "ctx",
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		t.Fatal(err)
	}
}

func TestKubeconfigValid(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	now := time.Now()
	good, goodKey := ca.pair(t, "system:node:a", now.Add(-time.Hour), 24*time.Hour)
	expired, expiredKey := ca.pair(t, "system:node:a", now.Add(-48*time.Hour), 24*time.Hour)
	_, otherKey := ca.pair(t, "system:node:a", now, time.Hour)
	pemFile := filepath.Join(dir, "pair.pem")
	os.WriteFile(pemFile, append(append([]byte{}, good...), goodKey...), 0o600)
	fileBased := filepath.Join(dir, "files.conf")
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://10.0.0.1:6443"}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {ClientCertificate: pemFile, ClientKey: pemFile}},
		Contexts:       map[string]*clientcmdapi.Context{"ctx": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "ctx",
	}
	clientcmd.WriteToFile(kc, fileBased)
	cases := []struct {
		name  string
		setup func(path string)
		want  bool
		why   string
	}{
		{"missing", func(string) {}, false, "cannot read it"},
		{"garbage", func(p string) { os.WriteFile(p, []byte("{{{"), 0o600) }, false, "cannot load it"},
		{"token only", func(p string) { writeTestKubeconfig(t, p, "https://x", ca.pem, nil, nil, "abc.def") }, false, "no client certificate"},
		{"expired", func(p string) { writeTestKubeconfig(t, p, "https://x", ca.pem, expired, expiredKey, "") }, false, "expired at"},
		{"key of another pair", func(p string) { writeTestKubeconfig(t, p, "https://x", ca.pem, good, otherKey, "") }, false, "unusable"},
		{"embedded and valid", func(p string) { writeTestKubeconfig(t, p, "https://x", ca.pem, good, goodKey, "") }, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubelet.conf")
			tc.setup(path)
			ok, why := kubeconfigValid(path, now)
			if ok != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("valid = %v (%q), want %v (%q)", ok, why, tc.want, tc.why)
			}
		})
	}
	if ok, why := kubeconfigValid(fileBased, now); !ok {
		t.Errorf("file-based kubeconfig: %s", why)
	}
	os.Remove(pemFile)
	if ok, _ := kubeconfigValid(fileBased, now); ok {
		t.Error("a kubeconfig whose certificate file is gone is valid")
	}
}

func TestNewClientDecisions(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	good, goodKey := ca.pair(t, "system:node:n1", now.Add(-time.Hour), 24*time.Hour)
	ctx := context.Background()

	t.Run("kubeconfig as it is without bootstrap or rotation", func(t *testing.T) {
		dir := t.TempDir()
		kc := filepath.Join(dir, "kubelet.conf")
		writeTestKubeconfig(t, kc, "https://10.0.0.1:6443", ca.pem, good, goodKey, "")
		c, err := NewClient(ctx, ClientConfig{Kubeconfig: kc, CertDir: filepath.Join(dir, "pki"), NodeName: "n1"})
		if err != nil || c.Manager != nil || c.Config.Host != "https://10.0.0.1:6443" || len(c.Config.CertData) == 0 {
			t.Fatalf("client %+v, %v", c, err)
		}
	})

	t.Run("missing kubeconfig with rotation: written at once, pointing at the cert dir", func(t *testing.T) {
		dir := t.TempDir()
		kc, boot, pki := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "bootstrap-kubelet.conf"), filepath.Join(dir, "pki")
		writeTestKubeconfig(t, boot, "https://10.0.0.1:6443", ca.pem, nil, nil, "abcdef.0123456789abcdef")
		c, err := NewClient(ctx, ClientConfig{Kubeconfig: kc, BootstrapKubeconfig: boot, CertDir: pki, NodeName: "n1", Rotate: true})
		if err != nil {
			t.Fatal(err)
		}
		if c.Manager == nil || c.Manager.Current() != nil {
			t.Fatal("want a manager without a certificate yet")
		}
		written, err := clientcmd.LoadFromFile(kc)
		if err != nil {
			t.Fatal(err)
		}
		auth := written.AuthInfos[written.Contexts[written.CurrentContext].AuthInfo]
		cluster := written.Clusters[written.Contexts[written.CurrentContext].Cluster]
		pem := filepath.Join(pki, "kubelet-client-current.pem")
		if auth.ClientCertificate != pem || auth.ClientKey != pem || auth.Token != "" {
			t.Errorf("auth %+v, want the cert dir's current pair", auth)
		}
		if cluster.Server != "https://10.0.0.1:6443" || string(cluster.CertificateAuthorityData) != string(ca.pem) {
			t.Errorf("cluster %s, not the bootstrap kubeconfig's", cluster.Server)
		}
		if fi, _ := os.Stat(kc); fi.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig mode %v", fi.Mode())
		}
		// The API clients authenticate with the managed certificate only.
		if c.Config.BearerToken != "" || len(c.Config.CertData) != 0 || c.Config.Transport == nil {
			t.Errorf("client config carries other credentials: %+v", c.Config)
		}
	})

	t.Run("expired kubeconfig without rotation: kubeconfig written only after issuance", func(t *testing.T) {
		dir := t.TempDir()
		kc, boot, pki := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "bootstrap-kubelet.conf"), filepath.Join(dir, "pki")
		old, oldKey := ca.pair(t, "system:node:n1", now.Add(-48*time.Hour), 24*time.Hour)
		writeTestKubeconfig(t, kc, "https://10.0.0.1:6443", ca.pem, old, oldKey, "")
		before, _ := os.ReadFile(kc)
		writeTestKubeconfig(t, boot, "https://10.0.0.1:6443", ca.pem, nil, nil, "abcdef.0123456789abcdef")
		c, err := NewClient(ctx, ClientConfig{Kubeconfig: kc, BootstrapKubeconfig: boot, CertDir: pki, NodeName: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if c.Manager == nil || !c.kubeconfigAfterIssue || c.Manager.cfg.PendingKeyFile != filepath.Join(pki, "kubelet-client.key.tmp") {
			t.Fatalf("want a bootstrap manager with a pending key file, got %+v", c.Manager)
		}
		if after, _ := os.ReadFile(kc); string(after) != string(before) {
			t.Error("kubeconfig rewritten before a certificate was issued")
		}
	})

	t.Run("valid embedded kubeconfig with rotation: the pair goes to the cert dir", func(t *testing.T) {
		dir := t.TempDir()
		kc, pki := filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "pki")
		writeTestKubeconfig(t, kc, "https://10.0.0.1:6443", ca.pem, good, goodKey, "")
		c, err := NewClient(ctx, ClientConfig{Kubeconfig: kc, BootstrapKubeconfig: filepath.Join(dir, "none.conf"), CertDir: pki, NodeName: "n1", Rotate: true})
		if err != nil {
			t.Fatal(err)
		}
		cur := c.Manager.Current()
		if cur == nil || leafOf(t, cur).Subject.CommonName != "system:node:n1" {
			t.Fatal("the embedded pair is not in use")
		}
		if _, err := os.Stat(filepath.Join(pki, "kubelet-client-current.pem")); err != nil {
			t.Fatalf("embedded pair not stored: %v", err)
		}
		if !c.Manager.force {
			t.Error("the embedded pair must be replaced at once")
		}
	})

	t.Run("no kubeconfig and no bootstrap kubeconfig", func(t *testing.T) {
		dir := t.TempDir()
		_, err := NewClient(ctx, ClientConfig{Kubeconfig: filepath.Join(dir, "kubelet.conf"), CertDir: dir, NodeName: "n1", Rotate: true})
		if err == nil {
			t.Fatal("started without credentials")
		}
	})

	t.Run("unreadable bootstrap kubeconfig is named", func(t *testing.T) {
		dir := t.TempDir()
		boot := filepath.Join(dir, "bootstrap-kubelet.conf")
		_, err := NewClient(ctx, ClientConfig{Kubeconfig: filepath.Join(dir, "kubelet.conf"), BootstrapKubeconfig: boot, CertDir: dir, NodeName: "n1", Rotate: true})
		if err == nil || !strings.Contains(err.Error(), boot) {
			t.Fatalf("err = %v, want it to name %s", err, boot)
		}
	})
}
