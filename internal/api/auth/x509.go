package auth

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// caReloadInterval is how often the client CA file is re-read, as
// upstream's dynamic CA file content polls it.
const caReloadInterval = time.Minute

// caBundle is the client CA file, re-read lazily so a rotated bundle is
// picked up without a restart; a bundle that fails to load keeps the old.
type caBundle struct {
	path  string
	clock clock.PassiveClock

	mu        sync.Mutex
	raw       []byte
	roots     *x509.CertPool
	checkedAt time.Time
}

func loadCABundle(path string, clk clock.PassiveClock) (*caBundle, error) {
	raw, roots, err := readCABundle(path)
	if err != nil {
		return nil, fmt.Errorf("unable to load client CA file %q: %w", path, err)
	}
	return &caBundle{path: path, clock: clk, raw: raw, roots: roots, checkedAt: clk.Now()}, nil
}

func readCABundle(path string) ([]byte, *x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := raw; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, err
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, nil, errors.New("no certificates found")
	}
	return raw, pool, nil
}

func (b *caBundle) pool() *x509.CertPool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.clock.Since(b.checkedAt) >= caReloadInterval {
		b.checkedAt = b.clock.Now()
		raw, roots, err := readCABundle(b.path)
		switch {
		case err != nil:
			klog.ErrorS(err, "Unable to reload client CA file, keeping the loaded bundle", "path", b.path)
		case !bytes.Equal(raw, b.raw):
			klog.InfoS("Reloaded client CA file", "path", b.path)
			b.raw, b.roots = raw, roots
		}
	}
	return b.roots
}

// verifyOptions requires a chain to the bundle valid for client auth.
func (b *caBundle) verifyOptions() x509.VerifyOptions {
	return x509.VerifyOptions{
		Roots:         b.pool(),
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// uidOID is the distinguished-name attribute carrying a user's UID
// (1.3.6.1.4.1.57683.2), honoured as upstream does by default since 1.33.
var uidOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

// userFromCertificate maps a verified leaf to a user; no CN means no user.
func userFromCertificate(c *x509.Certificate) (*User, bool, error) {
	if c.Subject.CommonName == "" {
		return nil, false, nil
	}
	var uids []string
	for _, name := range c.Subject.Names {
		if !name.Type.Equal(uidOID) {
			continue
		}
		uid, ok := name.Value.(string)
		if !ok {
			return nil, false, errors.New("unable to parse UID into a string")
		}
		uids = append(uids, uid)
	}
	var uid string
	switch {
	case len(uids) > 1:
		return nil, false, fmt.Errorf("expected 1 UID, but found multiple: %v", uids)
	case len(uids) == 1 && uids[0] == "":
		return nil, false, errors.New("UID cannot be an empty string")
	case len(uids) == 1:
		uid = uids[0]
	}
	return &User{
		Name:   c.Subject.CommonName,
		UID:    uid,
		Groups: c.Subject.Organization,
		Extra:  map[string][]string{CredentialIDKey: {credentialID(c.Raw)}},
	}, true, nil
}

// certificateIdentifier names a certificate in errors and logs.
func certificateIdentifier(c *x509.Certificate) string {
	return fmt.Sprintf("CN=%q, SN=%s, issuer=%q, %s", c.Subject.CommonName, c.SerialNumber, c.Issuer.CommonName, credentialID(c.Raw))
}
