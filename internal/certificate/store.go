package certificate

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrNoCertificate says a store holds no certificate/key pair yet.
var ErrNoCertificate = errors.New("no certificate/key pair")

// Store keeps the current certificate/key pair.
type Store interface {
	// Current returns the current pair with its Leaf parsed; an error
	// wrapping ErrNoCertificate when there is none.
	Current() (*tls.Certificate, error)
	// Update makes the PEM pair the current one and returns it.
	Update(certPEM, keyPEM []byte) (*tls.Certificate, error)
}

// FileStore is upstream's certificate file store
// (k8s.io/client-go/util/certificate): each pair is one PEM file
// <dir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem holding the certificate chain
// then the key, and <dir>/<prefix>-current.pem is a symlink to the pair in
// use. Old pairs are never deleted.
type FileStore struct {
	prefix, dir       string
	certFile, keyFile string
	clock             clock.PassiveClock
}

var _ Store = (*FileStore)(nil)

const (
	pemExtension = ".pem"
	currentPair  = "current"
	updatedPair  = "updated"
)

// NewFileStore opens the store for pairs named prefix in dir. Until it has
// a current pair it falls back, as upstream, to certFile/keyFile (when
// both are set and exist), then to <dir>/<prefix>.crt and <prefix>.key. It
// completes a switch of the current link that a crash interrupted.
func NewFileStore(prefix, dir, certFile, keyFile string, clk clock.PassiveClock) (*FileStore, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	s := &FileStore{prefix: prefix, dir: dir, certFile: certFile, keyFile: keyFile, clock: clk}
	if err := s.recover(); err != nil {
		return nil, err
	}
	return s, nil
}

// CurrentPath is the path of the current pair's link.
func (s *FileStore) CurrentPath() string { return filepath.Join(s.dir, s.filename(currentPair)) }

func (s *FileStore) filename(qualifier string) string {
	return s.prefix + "-" + qualifier + pemExtension
}

// recover finishes an interrupted link switch: "updated" exists, "current"
// does not.
func (s *FileStore) recover() error {
	current := s.CurrentPath()
	if ok, err := fileExists(current); err != nil || ok {
		return err
	}
	updated := filepath.Join(s.dir, s.filename(updatedPair))
	fi, err := os.Lstat(updated)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("expected %q to be a symlink but it is a file", updated)
	}
	if err := os.Rename(updated, current); err != nil {
		return fmt.Errorf("unable to rename %q to %q: %w", updated, current, err)
	}
	return nil
}

// Current returns the current pair.
func (s *FileStore) Current() (*tls.Certificate, error) {
	pair := s.CurrentPath()
	if ok, err := fileExists(pair); err != nil {
		return nil, err
	} else if ok {
		klog.V(4).InfoS("Loading cert/key pair from a file", "filePath", pair)
		return loadPair(pair, pair)
	}
	for _, files := range [][2]string{
		{s.certFile, s.keyFile},
		{filepath.Join(s.dir, s.prefix+".crt"), filepath.Join(s.dir, s.prefix+".key")},
	} {
		certOK, err := fileExists(files[0])
		if err != nil {
			return nil, err
		}
		keyOK, err := fileExists(files[1])
		if err != nil {
			return nil, err
		}
		if certOK && keyOK {
			klog.V(4).InfoS("Loading cert/key pair", "certFile", files[0], "keyFile", files[1])
			return loadPair(files[0], files[1])
		}
	}
	return nil, fmt.Errorf("%w: none at %q, (%q, %q) or %q", ErrNoCertificate, pair, s.certFile, s.keyFile, filepath.Join(s.dir, s.prefix+".{crt,key}"))
}

// Update writes the pair to a new timestamped file and points the current
// link at it once it is complete and loads as a valid pair.
func (s *FileStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("invalid certificate data: %w", err)
	}
	keyBlock, _ := pem.Decode(keyPEM)
	if keyBlock == nil {
		return nil, errors.New("invalid key data")
	}
	var buf bytes.Buffer
	for _, c := range certs { // the leaf first, then intermediates
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	pem.Encode(&buf, keyBlock)

	path := filepath.Join(s.dir, s.filename(s.clock.Now().Format("2006-01-02-15-04-05")))
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("could not write %q: %w", path, err)
	}
	cert, err := loadPair(path, path)
	if err != nil {
		return nil, err
	}
	if err := s.updateSymlink(path); err != nil {
		return nil, err
	}
	return cert, nil
}

// updateSymlink points the current link at path through a temporary
// "updated" link and a rename, so the current link always names a whole
// pair. A regular file where a link is expected is an error.
func (s *FileStore) updateSymlink(path string) error {
	current := s.CurrentPath()
	if fi, err := os.Lstat(current); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("expected %q to be a symlink but it is a file", current)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	updated := filepath.Join(s.dir, s.filename(updatedPair))
	if fi, err := os.Lstat(updated); err == nil {
		if fi.Mode()&os.ModeSymlink == 0 {
			return fmt.Errorf("expected %q to be a symlink but it is a file", updated)
		}
		if err := os.Remove(updated); err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := os.Symlink(abs, updated); err != nil {
		return fmt.Errorf("unable to create a symlink from %q to %q: %w", updated, abs, err)
	}
	if err := os.Rename(updated, current); err != nil {
		return fmt.Errorf("unable to rename %q to %q: %w", updated, current, err)
	}
	return nil
}

// loadPair loads a certificate/key pair (one file may hold both) and
// parses its leaf.
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("could not load cert/key pair from %q, %q: %w", certFile, keyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("unable to parse certificate data: %w", err)
		}
	}
	return &cert, nil
}
