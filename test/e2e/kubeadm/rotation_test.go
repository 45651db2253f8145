//go:build e2e && rotation

package kubeadm

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	certutil "k8s.io/client-go/util/cert"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
	ifw "github.com/seed-kubelet/kubelet/test/integration/framework"
)

// signingDuration is kube-controller-manager's --cluster-signing-duration
// for the rotation test ($ROTATION_SIGNING_DURATION, default 3m). The
// signer backdates certificates by 5 minutes, so a 3m certificate lives
// 8 minutes on paper and the kubelet rotates it 0.6-2.2 minutes after it
// was issued, well before it expires; with 10m (the smallest CSR
// expirationSeconds) it rotates 5.5-8.5 minutes in.
func signingDuration(t *testing.T) time.Duration {
	d := 3 * time.Minute
	if s := os.Getenv("ROTATION_SIGNING_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("ROTATION_SIGNING_DURATION: %v", err)
		}
	}
	return d
}

// TestKubeadmClientCertificateRotation: on a kubeadm control plane whose
// controller-manager signs short-lived certificates, our kubelet renews its
// client certificate twice, each time inside upstream's 70-90 % window and
// before the old one expires, and meanwhile the Node never stops being
// Ready, its Lease is renewed without a gap, and no container restarts
// (the control plane runs in static pods of this very kubelet).
func TestKubeadmClientCertificateRotation(t *testing.T) {
	duration := signingDuration(t)
	c := newCluster(t, "kubeadm-rot")
	c.controllerManagerArgs = map[string]string{"cluster-signing-duration": duration.String()}
	c.initControlPlane()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	node := waitNodeReady(t, c.admin, c.cpName, 2*time.Minute)

	// A pod on the control-plane node, besides the static pods.
	pod := sleeperPod("steady")
	pod.Spec.NodeName = c.cpName
	ifw.Eventually(t, time.Minute, 200*time.Millisecond, "default service account", func() (bool, error) {
		_, err := c.admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	if _, err := c.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePod(t, c, "default", "steady") })
	ifw.Eventually(t, time.Minute, 200*time.Millisecond, "pod steady Running", func() (bool, error) {
		p, err := c.admin.CoreV1().Pods("default").Get(ctx, "steady", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning, err
	})

	// The first certificate from the signer replaces kubeadm's one-year
	// pair right after init.
	pemPath := filepath.Join(varLibKubelet, "pki", "kubelet-client-current.pem")
	current := func() *x509.Certificate {
		certs, err := certutil.CertsFromFile(pemPath)
		if err != nil {
			return nil
		}
		return certs[0]
	}
	var cert *x509.Certificate
	ifw.Eventually(t, time.Minute, 200*time.Millisecond, "a short-lived certificate from the signer", func() (bool, error) {
		cert = current()
		return cert != nil && cert.NotAfter.Sub(cert.NotBefore) < time.Hour, nil
	})

	obs := watchNode(ctx, t, c, node.UID)
	for rotation := 1; rotation <= 2; rotation++ {
		lifetime := cert.NotAfter.Sub(cert.NotBefore)
		earliest := cert.NotBefore.Add(lifetime * 7 / 10)
		latest := cert.NotBefore.Add(lifetime * 9 / 10)
		t.Logf("certificate %v valid %v to %v: rotation due %v to %v", cert.SerialNumber, cert.NotBefore.Format(time.TimeOnly),
			cert.NotAfter.Format(time.TimeOnly), earliest.Format(time.TimeOnly), latest.Format(time.TimeOnly))
		var next *x509.Certificate
		ifw.Eventually(t, time.Until(cert.NotAfter)+time.Minute, 500*time.Millisecond, fmt.Sprintf("rotation %d", rotation), func() (bool, error) {
			next = current()
			return next != nil && next.SerialNumber.Cmp(cert.SerialNumber) != 0, nil
		})
		seen := time.Now()
		t.Logf("rotation %d seen at %v: new certificate %v", rotation, seen.Format(time.TimeOnly), next.SerialNumber)
		// Seen (within the 0.5 s poll) after the window opened and before
		// the old certificate expired; the request itself took a moment.
		if seen.Before(earliest) {
			t.Errorf("rotation %d at %v, before 70 %% of the lifetime (%v)", rotation, seen, earliest)
		}
		if !seen.Before(cert.NotAfter) {
			t.Errorf("rotation %d at %v, after the certificate expired (%v)", rotation, seen, cert.NotAfter)
		}
		if seen.After(latest.Add(30 * time.Second)) {
			t.Errorf("rotation %d at %v, well after 90 %% of the lifetime (%v)", rotation, seen, latest)
		}
		cert = next
	}
	// Two more heartbeats on the last certificate.
	last := time.Now()
	ifw.Eventually(t, time.Minute, 200*time.Millisecond, "two lease renewals with the new certificate", func() (bool, error) {
		return obs.renewalsAfter(last) >= 2, nil
	})
	cancel()
	obs.check(t)

	p, err := c.admin.CoreV1().Pods("default").Get(context.Background(), "steady", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.admin.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(pods.Items, *p) {
		for _, s := range p.Status.ContainerStatuses {
			if s.RestartCount != 0 {
				t.Errorf("%s/%s container %s restarted %d times", p.Namespace, p.Name, s.Name, s.RestartCount)
			}
		}
	}
}

// nodeObserver records what the Node and its Lease did.
type nodeObserver struct {
	mu         sync.Mutex
	notReady   []string
	reRegister bool
	renewals   []time.Time
	uid        string
}

// watchNode records, until ctx ends, every moment the Node was not
// Ready, a new Node UID, and every Lease renewal.
func watchNode(ctx context.Context, t *testing.T, c *cluster, uid types.UID) *nodeObserver {
	t.Helper()
	o := &nodeObserver{uid: string(uid)}
	nw, err := c.admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + c.cpName})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := c.admin.CoordinationV1().Leases("kube-node-lease").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + c.cpName})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer nw.Stop()
		defer lw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-nw.ResultChan():
				if !ok {
					o.note(func() { o.notReady = append(o.notReady, "node watch ended") })
					return
				}
				if n, ok := ev.Object.(*v1.Node); ok {
					o.note(func() {
						if string(n.UID) != o.uid || ev.Type == watch.Deleted {
							o.reRegister = true
						}
						if !framework.NodeReady(n) {
							o.notReady = append(o.notReady, fmt.Sprintf("%v: %v", time.Now().Format(time.TimeOnly), n.Status.Conditions))
						}
					})
				}
			case ev, ok := <-lw.ResultChan():
				if !ok {
					o.note(func() { o.notReady = append(o.notReady, "lease watch ended") })
					return
				}
				if l, ok := ev.Object.(*coordinationv1.Lease); ok && l.Spec.RenewTime != nil {
					o.note(func() { o.renewals = append(o.renewals, l.Spec.RenewTime.Time) })
				}
			}
		}
	}()
	return o
}

func (o *nodeObserver) renewalsAfter(at time.Time) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.renewals {
		if r.After(at) {
			n++
		}
	}
	return n
}

func (o *nodeObserver) note(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f()
}

// check fails the test for any lost Ready, re-registration or lease gap
// longer than two renew intervals (10 s each, nodeLeaseDurationSeconds
// 40 s).
func (o *nodeObserver) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.notReady) > 0 {
		t.Errorf("the node was not Ready: %v", o.notReady)
	}
	if o.reRegister {
		t.Error("the node registered again")
	}
	if len(o.renewals) < 10 {
		t.Errorf("only %d lease renewals seen", len(o.renewals))
	}
	var worst time.Duration
	for i := 1; i < len(o.renewals); i++ {
		worst = max(worst, o.renewals[i].Sub(o.renewals[i-1]))
	}
	if worst > 20*time.Second {
		t.Errorf("lease renewals %v apart at worst, want at most 2 renew intervals (20s)", worst)
	}
	t.Logf("%d lease renewals, at most %v apart", len(o.renewals), worst)
}
