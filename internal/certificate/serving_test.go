package certificate

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
)

// TestSelfSignedIsACAAndALeaf: upstream's fallback is a CA plus a leaf it
// signed (kubelet.crt holds the leaf then the CA), generated once.
func TestSelfSignedIsACAAndALeaf(t *testing.T) {
	dir := t.TempDir()
	s, err := NewServing(ServingConfig{CertDir: dir, NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.CertsFromFile(filepath.Join(dir, "kubelet.crt"))
	if err != nil || len(certs) != 2 {
		t.Fatalf("kubelet.crt: %d certificates, %v; want leaf and CA", len(certs), err)
	}
	leaf, ca := certs[0], certs[1]
	if !ca.IsCA || !strings.HasPrefix(ca.Subject.CommonName, "node-a-ca@") {
		t.Errorf("CA %q IsCA=%v", ca.Subject.CommonName, ca.IsCA)
	}
	if leaf.IsCA || !strings.HasPrefix(leaf.Subject.CommonName, "node-a@") || !reflect.DeepEqual(leaf.DNSNames, []string{"node-a"}) ||
		!reflect.DeepEqual(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("leaf %q IsCA=%v DNS %v EKU %v", leaf.Subject.CommonName, leaf.IsCA, leaf.DNSNames, leaf.ExtKeyUsage)
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		t.Errorf("leaf not signed by the CA: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "kubelet.key")); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode())
	}
	served, err := s.GetCertificate(nil)
	if err != nil || len(served.Certificate) != 2 {
		t.Fatalf("served %v, %v", served, err)
	}
	if _, ok := served.PrivateKey.(*rsa.PrivateKey); !ok {
		t.Errorf("key %T, want RSA as upstream", served.PrivateKey)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "kubelet.crt"))
	if _, err := NewServing(ServingConfig{CertDir: dir, NodeName: "node-a"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "kubelet.crt")); string(after) != string(before) {
		t.Error("the self-signed pair was regenerated")
	}
}

// TestServingFilesReloadWhenReplaced: tlsCertFile/tlsPrivateKeyFile are
// served, replaced pairs are picked up without a restart (files renamed
// into place and files rewritten in place), and a broken pair keeps the
// last good one.
func TestServingFilesReloadWhenReplaced(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(path string, data []byte) {
		tmp := path + ".new"
		os.WriteFile(tmp, data, 0o600)
		os.Rename(tmp, path)
	}
	c1, k1 := ca.pair(t, "one", time.Now(), time.Hour)
	write(certFile, c1)
	write(keyFile, k1)
	s, err := NewServing(ServingConfig{CertFile: certFile, KeyFile: keyFile, CertDir: dir, NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	served := func() string {
		c, err := s.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return leafOf(t, c).Subject.CommonName
	}
	if served() != "one" {
		t.Fatal("not serving the configured pair")
	}
	// A change made before the watcher is up is caught by the next one:
	// write until it is served.
	c2, k2 := ca.pair(t, "two", time.Now(), time.Hour)
	waitFor(t, "the renamed-in pair to be served", func() bool {
		write(keyFile, k2)
		write(certFile, c2)
		return served() == "two"
	})
	c3, k3 := ca.pair(t, "three", time.Now(), time.Hour)
	waitFor(t, "the pair rewritten in place to be served", func() bool {
		os.WriteFile(keyFile, k3, 0o600)
		os.WriteFile(certFile, c3, 0o600)
		return served() == "three"
	})
	os.WriteFile(certFile, []byte("not a certificate"), 0o600)
	if err := s.files.load(); err == nil {
		t.Fatal("a broken certificate file loaded")
	}
	if served() != "three" {
		t.Fatal("a broken pair replaced the good one")
	}
}

func TestServingBootstrapWithoutAPIServesOnlyWhatItHas(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	s, err := NewServing(ServingConfig{CertDir: dir, NodeName: "n", Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetCertificate(nil); err == nil || !strings.Contains(err.Error(), "no serving certificate available") {
		t.Fatalf("err = %v, want upstream's error until a certificate is issued", err)
	}
	// tlsCertFile serves until the first requested certificate.
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c, k := ca.pair(t, "from-file", time.Now(), time.Hour)
	os.WriteFile(certFile, c, 0o600)
	os.WriteFile(keyFile, k, 0o600)
	s, err = NewServing(ServingConfig{CertFile: certFile, KeyFile: keyFile, CertDir: dir, NodeName: "n", Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetCertificate(nil); err != nil || leafOf(t, got).Subject.CommonName != "from-file" {
		t.Fatalf("got %v, %v", got, err)
	}
}

// TestServingTemplate follows upstream's addressesToHostnamesAndIPs and
// newGetTemplateFn: SANs from every address type, deduplicated and sorted;
// no request without an IP.
func TestServingTemplate(t *testing.T) {
	addrs := []v1.NodeAddress{
		{Type: v1.NodeHostName, Address: "node-a"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.2"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: v1.NodeExternalIP, Address: "10.0.0.1"},
		{Type: v1.NodeInternalDNS, Address: "a.internal"},
		{Type: v1.NodeExternalDNS, Address: "a.example.com"},
		{Type: v1.NodeHostName, Address: "192.168.1.1"},
		{Type: v1.NodeInternalIP, Address: "not-an-ip"},
		{Type: v1.NodeInternalIP, Address: ""},
	}
	tmpl := servingTemplate("node-a", func() []v1.NodeAddress { return addrs })()
	if tmpl.Subject.CommonName != "system:node:node-a" || !reflect.DeepEqual(tmpl.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v", tmpl.Subject)
	}
	if want := []string{"a.example.com", "a.internal", "node-a"}; !reflect.DeepEqual(tmpl.DNSNames, want) {
		t.Errorf("DNS %v, want %v", tmpl.DNSNames, want)
	}
	var ips []string
	for _, ip := range tmpl.IPAddresses {
		ips = append(ips, ip.String())
	}
	if want := []string{"10.0.0.1", "10.0.0.2", "192.168.1.1"}; !reflect.DeepEqual(ips, want) {
		t.Errorf("IPs %v, want %v", ips, want)
	}
	if got := servingTemplate("n", func() []v1.NodeAddress { return []v1.NodeAddress{{Type: v1.NodeHostName, Address: "n"}} })(); got != nil {
		t.Errorf("template without an IP: %v", got)
	}
}
