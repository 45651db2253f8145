package nodelease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

const (
	// Namespace holds the node leases.
	Namespace = v1.NamespaceNodeLease
	// DefaultLeaseDurationSeconds is nodeLeaseDurationSeconds' default.
	DefaultLeaseDurationSeconds = 40
	// renewIntervalFraction of the lease duration is the default renew
	// interval.
	renewIntervalFraction = 0.25
	// updateRetries is how many times one renewal is tried before waiting
	// for the next interval.
	updateRetries = 5
	// ensureInitialDelay doubles up to ensureMaxDelay while the lease can
	// neither be read nor created.
	ensureInitialDelay = 100 * time.Millisecond
	ensureMaxDelay     = 7 * time.Second
	// jitterFactor spreads renewals so nodes do not renew in lockstep.
	jitterFactor = 0.04
)

// errOwnerUnknown defers creating the lease until the Node's UID is known.
var errOwnerUnknown = errors.New("the node's UID is not known yet")

// Config configures a Controller.
type Config struct {
	// Client talks to the API server (required).
	Client kubeclient.Interface
	// NodeName names the lease and is its holder (required).
	NodeName string
	// Clock defaults to the real clock.
	Clock clock.Clock
	// LeaseDurationSeconds is nodeLeaseDurationSeconds (default 40).
	LeaseDurationSeconds int32
	// RenewInterval defaults to a quarter of the lease duration.
	RenewInterval time.Duration
	// NodeUID, optional, returns the Node's UID ("" while unknown) for the
	// lease's owner reference, so the lease goes when the Node goes. When
	// set, the lease is created only once the UID is known, and an existing
	// lease without owner gets one at its next renewal. When nil the lease
	// has no owner.
	NodeUID func() types.UID
	// OnRepeatedFailure, optional, is called when a renewal fails more than
	// once in a row (upstream closes the client's connections).
	OnRepeatedFailure func()
}

// Controller creates and renews the node's Lease in kube-node-lease, the
// heartbeat the node lifecycle controller watches.
type Controller struct {
	cfg    Config
	clock  clock.Clock
	jitter func() float64 // in [0,1); tests make it 0

	// Owned by the Run goroutine: the lease as last written, renewed
	// without reading it first.
	latest *coordinationv1.Lease
}

// New returns a controller; it panics when a required field is missing.
func New(cfg Config) *Controller {
	if cfg.Client == nil || cfg.NodeName == "" {
		panic("nodelease.New: Client and NodeName are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.LeaseDurationSeconds <= 0 {
		cfg.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if cfg.RenewInterval <= 0 {
		cfg.RenewInterval = time.Duration(renewIntervalFraction * float64(time.Duration(cfg.LeaseDurationSeconds)*time.Second))
	}
	return &Controller{cfg: cfg, clock: cfg.Clock, jitter: rand.Float64}
}

// Run keeps the lease renewed until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	for ctx.Err() == nil {
		c.sync(ctx)
		wait := c.cfg.RenewInterval + time.Duration(c.jitter()*jitterFactor*float64(c.cfg.RenewInterval))
		if !c.sleep(ctx, wait) {
			return
		}
	}
}

func (c *Controller) sleep(ctx context.Context, d time.Duration) bool {
	return backoff.Sleep(ctx, c.clock, d)
}

// sync renews the lease: from the copy last written when there is one (no
// read needed), else from what the API server has, creating it if missing.
func (c *Controller) sync(ctx context.Context) {
	if c.latest != nil {
		err := c.renew(ctx, c.latest)
		if err == nil {
			return
		}
		klog.InfoS("Failed to renew the node lease from the last written copy; reading it again", "lease", c.key(), "err", err)
		c.latest = nil
	}
	lease, created, ok := c.ensureWithBackoff(ctx)
	if !ok || lease == nil {
		return
	}
	c.latest = lease
	if created {
		return
	}
	if err := c.renew(ctx, lease); err != nil {
		klog.ErrorS(err, "Failed to renew the node lease, will retry", "lease", c.key(), "interval", c.cfg.RenewInterval)
	}
}

func (c *Controller) key() klog.ObjectRef { return klog.KRef(Namespace, c.cfg.NodeName) }

func (c *Controller) leases() kubeclient.LeaseInterface {
	return c.cfg.Client.CoordinationV1().Leases(Namespace)
}

// ensureWithBackoff reads the lease, creating it when missing, retrying
// errors with a doubling delay. ok is false when ctx ended; lease is nil
// when creation waits for the Node's UID.
func (c *Controller) ensureWithBackoff(ctx context.Context) (lease *coordinationv1.Lease, created, ok bool) {
	delays := backoff.Doubling(2*ensureInitialDelay, ensureMaxDelay)
	for {
		lease, created, err := c.ensure(ctx)
		if errors.Is(err, errOwnerUnknown) {
			klog.V(2).InfoS("Waiting for the node to be registered before creating its lease", "lease", c.key())
			return nil, false, true
		}
		if err == nil {
			return lease, created, true
		}
		delay := delays.Step()
		klog.ErrorS(err, "Failed to ensure the node lease exists, will retry", "lease", c.key(), "interval", delay)
		if !c.sleep(ctx, delay) {
			return nil, false, false
		}
	}
}

// ensure returns the lease, creating it when it does not exist.
func (c *Controller) ensure(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	lease, err := c.leases().Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err == nil {
		return lease, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("getting lease %s/%s: %w", Namespace, c.cfg.NodeName, err)
	}
	uid, known := c.nodeUID()
	if !known {
		return nil, false, errOwnerUnknown
	}
	created, err := c.leases().Create(ctx, NewLease(c.cfg.NodeName, c.cfg.LeaseDurationSeconds, uid, c.clock.Now()), metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("creating lease %s/%s: %w", Namespace, c.cfg.NodeName, err)
	}
	klog.V(2).InfoS("Created the node lease", "lease", c.key())
	return created, true, nil
}

// nodeUID returns the owner's UID; known is false only while a configured
// NodeUID has no answer yet.
func (c *Controller) nodeUID() (uid types.UID, known bool) {
	if c.cfg.NodeUID == nil {
		return "", true
	}
	uid = c.cfg.NodeUID()
	return uid, uid != ""
}

// renew writes base with a fresh renew time, up to updateRetries times; a
// conflict reads the lease again first.
func (c *Controller) renew(ctx context.Context, base *coordinationv1.Lease) error {
	var last error
	for i := 0; i < updateRetries; i++ {
		uid, _ := c.nodeUID()
		updated, err := c.leases().Update(ctx, Renewed(base, c.cfg.NodeName, uid, c.clock.Now()), metav1.UpdateOptions{})
		if err == nil {
			c.latest = updated
			return nil
		}
		last = err
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			// Gone: sync recreates it.
			return fmt.Errorf("renewing lease %s/%s: %w", Namespace, c.cfg.NodeName, err)
		}
		klog.ErrorS(err, "Failed to renew the node lease", "lease", c.key(), "attempt", i+1)
		if apierrors.IsConflict(err) {
			fresh, _, ok := c.ensureWithBackoff(ctx)
			if !ok {
				return fmt.Errorf("renewing lease %s/%s: %w", Namespace, c.cfg.NodeName, ctx.Err())
			}
			if fresh == nil {
				return fmt.Errorf("renewing lease %s/%s: %w", Namespace, c.cfg.NodeName, errOwnerUnknown)
			}
			base = fresh
			continue
		}
		if i > 0 && c.cfg.OnRepeatedFailure != nil {
			c.cfg.OnRepeatedFailure()
		}
	}
	return fmt.Errorf("renewing lease %s/%s failed %d times: %w", Namespace, c.cfg.NodeName, updateRetries, last)
}

// NewLease is the node's lease as first created: held by the node, renewed
// now, owned by the Node when uid is known.
func NewLease(nodeName string, durationSeconds int32, uid types.UID, now time.Time) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: Namespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(nodeName),
			LeaseDurationSeconds: ptr.To(durationSeconds),
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}
	setOwner(lease, nodeName, uid)
	return lease
}

// Renewed is a copy of base renewed now, given an owner if it has none and
// uid is known.
func Renewed(base *coordinationv1.Lease, nodeName string, uid types.UID, now time.Time) *coordinationv1.Lease {
	lease := base.DeepCopy()
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
	setOwner(lease, nodeName, uid)
	return lease
}

func setOwner(lease *coordinationv1.Lease, nodeName string, uid types.UID) {
	if uid == "" || len(lease.OwnerReferences) > 0 {
		return
	}
	lease.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.Version,
		Kind:       "Node",
		Name:       nodeName,
		UID:        uid,
	}}
}
