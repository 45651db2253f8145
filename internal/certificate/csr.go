package certificate

import (
	"context"
	"crypto"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"reflect"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// CSRClient is the part of the certificates API the kubelet uses.
type CSRClient interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
	List(ctx context.Context, opts metav1.ListOptions) (*certificatesv1.CertificateSigningRequestList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

var _ CSRClient = kubeclient.CertificateSigningRequestInterface(nil)

// Why a request did not produce a certificate; errors returned by the
// request functions wrap one of these and name the CSR.
var (
	// ErrDenied: an approver denied the CSR.
	ErrDenied = errors.New("denied")
	// ErrFailed: the signer could not sign it.
	ErrFailed = errors.New("failed")
	// ErrNotIssued: nobody approved, or the signer did not issue, in time.
	ErrNotIssued = errors.New("not issued in time")
	// ErrDeleted: the CSR was deleted (or replaced) while we waited.
	ErrDeleted = errors.New("deleted while waiting")
)

// requestCertificate creates a CSR for csrPEM, or, when name is set and a
// CSR of that name exists from an earlier run with the same key, reuses
// it, as upstream's csr.RequestCertificate. An empty name makes the API
// server generate one ("csr-").
func requestCertificate(ctx context.Context, c CSRClient, now time.Time, csrPEM []byte, name, signer string, lifetime *time.Duration,
	usages []certificatesv1.KeyUsage, key crypto.Signer) (string, types.UID, error) {
	csr := &certificatesv1.CertificateSigningRequest{
		// Username, UID and groups are set by the API server.
		TypeMeta:   metav1.TypeMeta{Kind: "CertificateSigningRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: csrPEM, Usages: usages, SignerName: signer},
	}
	if name == "" {
		csr.GenerateName = "csr-"
	}
	if lifetime != nil {
		csr.Spec.ExpirationSeconds = ptr.To(int32(*lifetime / time.Second))
	}
	created, err := c.Create(ctx, csr, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.V(2).InfoS("Certificate signing request created", "csr", created.Name, "signerName", signer)
		return created.Name, created.UID, nil
	case apierrors.IsAlreadyExists(err) && name != "":
		klog.InfoS("A certificate signing request of this name already exists, reusing it", "csr", name)
		existing, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("cannot retrieve certificate signing request %s: %w", name, err)
		}
		if err := ensureCompatible(existing, csr, key, now); err != nil {
			return "", "", fmt.Errorf("certificate signing request %s is not compatible: %w", name, err)
		}
		return existing.Name, existing.UID, nil
	default:
		return "", "", fmt.Errorf("cannot create certificate signing request: %w", err)
	}
}

// csrOutcome decides what a CSR's state means for the request waiting on
// it: the issued certificate, an error (denied, failed, replaced), or
// neither (keep waiting).
func csrOutcome(csr *certificatesv1.CertificateSigningRequest, uid types.UID) ([]byte, error) {
	if uid != "" && csr.UID != uid {
		return nil, fmt.Errorf("certificate signing request %s was replaced (UID %s, want %s): %w", csr.Name, csr.UID, uid, ErrDeleted)
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, fmt.Errorf("certificate signing request %s was %w: reason %q, message %q", csr.Name, ErrDenied, c.Reason, c.Message)
		case certificatesv1.CertificateFailed:
			return nil, fmt.Errorf("certificate signing request %s %w: reason %q, message %q", csr.Name, ErrFailed, c.Reason, c.Message)
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, nil
	}
	return nil, nil
}

// waitForCertificate watches the CSR until it is issued, denied, failed or
// deleted, or timeout passes on clk. It lists first, then watches from the
// list's resource version, and lists again when the watch ends.
func waitForCertificate(ctx context.Context, c CSRClient, clk clock.Clock, name string, uid types.UID, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := clk.NewTimer(timeout)
	defer deadline.Stop()
	timedOut := func() error {
		return fmt.Errorf("certificate signing request %s was %w (%v): nobody approved it or its signer did not issue it", name, ErrNotIssued, timeout)
	}
	go func() {
		select {
		case <-deadline.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	var lastErr error
	for {
		if ctx.Err() != nil {
			if lastErr != nil {
				return nil, fmt.Errorf("%w; last error: %v", timedOut(), lastErr)
			}
			return nil, timedOut()
		}
		list, err := c.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			lastErr = err
			klog.V(2).InfoS("Cannot list the certificate signing request, retrying", "csr", name, "err", err)
			select {
			case <-ctx.Done():
			case <-clk.After(time.Second):
			}
			continue
		}
		if len(list.Items) == 0 {
			return nil, fmt.Errorf("certificate signing request %s was %w", name, ErrDeleted)
		}
		if cert, err := csrOutcome(&list.Items[0], uid); cert != nil || err != nil {
			return cert, err
		}
		w, err := c.Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: list.ResourceVersion})
		if err != nil {
			lastErr = err
			continue
		}
		cert, err, done := watchCSR(ctx, w, name, uid)
		w.Stop()
		if done {
			return cert, err
		}
	}
}

// watchCSR reads CSR events until an outcome (done) or the watch ends.
func watchCSR(ctx context.Context, w watch.Interface, name string, uid types.UID) (cert []byte, err error, done bool) {
	for {
		select {
		case <-ctx.Done():
			return nil, nil, false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil, false
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
				if !ok {
					return nil, fmt.Errorf("unexpected object %T watching certificate signing request %s", ev.Object, name), true
				}
				if cert, err := csrOutcome(csr, uid); cert != nil || err != nil {
					if cert != nil {
						klog.V(2).InfoS("Certificate signing request is issued", "csr", name)
					}
					return cert, err, true
				}
				klog.V(3).InfoS("Waiting for the certificate signing request to be approved and issued", "csr", name)
			case watch.Deleted:
				return nil, fmt.Errorf("certificate signing request %s was %w", name, ErrDeleted), true
			case watch.Error:
				// Expired resource version and the like: list again.
				return nil, nil, false
			}
		}
	}
}

// ensureCompatible checks that an existing CSR asks for what we would ask
// for, signed by our key, and holds no expired certificate.
func ensureCompatible(existing, want *certificatesv1.CertificateSigningRequest, key crypto.Signer, now time.Time) error {
	got, err := parseCSR(existing.Spec.Request)
	if err != nil {
		return fmt.Errorf("unable to parse existing csr: %w", err)
	}
	orig, err := parseCSR(want.Spec.Request)
	if err != nil {
		return fmt.Errorf("unable to parse new csr: %w", err)
	}
	if !reflect.DeepEqual(got.Subject, orig.Subject) {
		return fmt.Errorf("csr subjects differ: existing %v, new %v", got.Subject, orig.Subject)
	}
	if existing.Spec.SignerName != "" && want.Spec.SignerName != "" && existing.Spec.SignerName != want.Spec.SignerName {
		return fmt.Errorf("csr signerNames differ: existing %q, new %q", existing.Spec.SignerName, want.Spec.SignerName)
	}
	got.PublicKey = key.Public()
	if err := got.CheckSignature(); err != nil {
		return fmt.Errorf("existing csr was not signed by our key: %w", err)
	}
	if len(existing.Status.Certificate) > 0 {
		certs, err := certutil.ParseCertsPEM(existing.Status.Certificate)
		if err != nil {
			return fmt.Errorf("error parsing signed certificate for CSR: %w", err)
		}
		for _, c := range certs {
			if now.After(c.NotAfter) {
				return fmt.Errorf("one of the certificates for the CSR has expired: %s", c.NotAfter)
			}
		}
	}
	return nil
}

func parseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// digestedName is upstream's deterministic bootstrap CSR name,
// node-csr-<hash of public key, subject and usages>: a kubelet restarted
// with the same pending key finds its earlier request again.
func digestedName(pub crypto.PublicKey, subject *pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	hash := sha512.New512_256()
	// '|' is not in the base64 URL alphabet: no two inputs hash alike.
	write := func(data []byte) {
		hash.Write([]byte(base64.RawURLEncoding.EncodeToString(data)))
		hash.Write([]byte{'|'})
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	write(der)
	write([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		write([]byte(o))
	}
	for _, u := range usages {
		write([]byte(u))
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(hash.Sum(nil)), nil
}
