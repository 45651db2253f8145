package certificate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestFileStoreUpdateKeepsEveryPairAndSwitchesTheLink(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	clk := testingclock.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s, err := NewFileStore("kubelet-client", dir, "", "", clk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Current(); !errors.Is(err, ErrNoCertificate) {
		t.Fatalf("empty store: err = %v, want ErrNoCertificate", err)
	}
	c1, k1 := ca.pair(t, "system:node:a", clk.Now(), time.Hour)
	got, err := s.Update(c1, k1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Leaf == nil || got.Leaf.Subject.CommonName != "system:node:a" {
		t.Fatalf("Update returned %v", got.Leaf)
	}
	first := filepath.Join(dir, "kubelet-client-2026-03-04-05-06-07.pem")
	if target, err := os.Readlink(s.CurrentPath()); err != nil || target != first {
		t.Fatalf("current link -> %q (%v), want %s", target, err, first)
	}
	if fi, err := os.Stat(first); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("pair file %v mode %v, want 0600", err, fi.Mode())
	}

	clk.Step(time.Minute)
	c2, k2 := ca.pair(t, "system:node:a", clk.Now(), time.Hour)
	if _, err := s.Update(c2, k2); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "kubelet-client-2026-03-04-05-07-07.pem")
	if target, _ := os.Readlink(s.CurrentPath()); target != second {
		t.Fatalf("current link -> %q, want %s", target, second)
	}
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the previous pair is gone: %v", err)
	}
	cur, err := s.Current()
	if err != nil || cur.Leaf.SerialNumber.Cmp(leafOf(t, got).SerialNumber) == 0 {
		t.Fatalf("Current = %v (%v), want the second pair", cur, err)
	}

	// A pair that does not load never becomes current.
	if _, err := s.Update(c1, k2); err == nil {
		t.Fatal("mismatched pair accepted")
	}
	if target, _ := os.Readlink(s.CurrentPath()); target != second {
		t.Fatalf("a bad update moved the link to %q", target)
	}
	if _, err := s.Update([]byte("junk"), k2); err == nil {
		t.Fatal("junk certificate accepted")
	}
}

func TestFileStoreFallbacks(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	now := time.Now()
	certPEM, keyPEM := ca.pair(t, "from-files", now, time.Hour)
	certFile, keyFile := filepath.Join(dir, "given.crt"), filepath.Join(dir, "given.key")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	legacyCert, legacyKey := ca.pair(t, "legacy", now, time.Hour)
	os.WriteFile(filepath.Join(dir, "kubelet-server.crt"), legacyCert, 0o600)
	os.WriteFile(filepath.Join(dir, "kubelet-server.key"), legacyKey, 0o600)

	s, _ := NewFileStore("kubelet-server", dir, certFile, keyFile, nil)
	if c, err := s.Current(); err != nil || c.Leaf.Subject.CommonName != "from-files" {
		t.Fatalf("with cert/key files: %v %v, want them", c, err)
	}
	s, _ = NewFileStore("kubelet-server", dir, "", "", nil)
	if c, err := s.Current(); err != nil || c.Leaf.Subject.CommonName != "legacy" {
		t.Fatalf("without: %v %v, want <prefix>.crt/.key", c, err)
	}
	cur, key := ca.pair(t, "current", now, time.Hour)
	if _, err := s.Update(cur, key); err != nil {
		t.Fatal(err)
	}
	s, _ = NewFileStore("kubelet-server", dir, certFile, keyFile, nil)
	if c, err := s.Current(); err != nil || c.Leaf.Subject.CommonName != "current" {
		t.Fatalf("the current link must win: %v %v", c, err)
	}
}

func TestFileStoreRecoversAnInterruptedSwitch(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.pair(t, "x", time.Now(), time.Hour)
	pair := filepath.Join(dir, "kubelet-client-2026-01-01-00-00-00.pem")
	os.WriteFile(pair, append(certPEM, keyPEM...), 0o600)
	// Crashed after creating "updated", before renaming it over "current".
	if err := os.Symlink(pair, filepath.Join(dir, "kubelet-client-updated.pem")); err != nil {
		t.Fatal(err)
	}
	s, err := NewFileStore("kubelet-client", dir, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Current(); err != nil || c.Leaf.Subject.CommonName != "x" {
		t.Fatalf("after recovery: %v %v", c, err)
	}

	// A regular file where the link belongs is refused, not overwritten.
	dir2 := t.TempDir()
	os.WriteFile(filepath.Join(dir2, "kubelet-client-current.pem"), append(certPEM, keyPEM...), 0o600)
	s2, _ := NewFileStore("kubelet-client", dir2, "", "", nil)
	if _, err := s2.Update(certPEM, keyPEM); err == nil {
		t.Fatal("a regular current file was replaced")
	}
}
